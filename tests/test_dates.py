"""``publishing.dates`` prints what the ``date`` template filter prints, in other languages and zones too."""
import datetime
import zoneinfo

import pytest
from django.template import Context, Template
from django.utils import timezone, translation

from publishing.dates import dated, long_date, machine_datetime, month_day, month_names

FILTERS = Template(r"""{{ day|date:"M j" }}|{{ moment|date:"F j, Y" }}|{{ moment|date:'Y-m-d\TH:i:sO' }}""")


@pytest.mark.parametrize("language", ["en", "de", "fr", "ja"])
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata"])
def test_every_month_prints_as_the_filter_prints_it(language, zone):
    with translation.override(language), timezone.override(zoneinfo.ZoneInfo(zone)):
        for month in range(1, 13):
            day = datetime.date(2026, month, 1 + month)
            # 00:30 UTC on the 1st is the previous day (and month) west of UTC
            moment = datetime.datetime(2026, month, 1, 0, 30, 5, tzinfo=datetime.timezone.utc)
            expected = FILTERS.render(Context({"day": day, "moment": moment}))
            assert f"{month_day(day)}|{long_date(moment)}|{machine_datetime(moment)}" == expected
            # a listing's form: names and zone looked up once, passed in
            names, current = month_names()[0], timezone.get_current_timezone()
            assert "|".join(dated(moment, names, current)[::-1]) == expected.split("|", 1)[1]
