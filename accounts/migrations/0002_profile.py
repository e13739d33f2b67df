"""Each staff user's own preferences: the time zone the newsroom shows times in."""

import accounts.models
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
        ('auth', '0012_alter_user_first_name_max_length'),
    ]

    operations = [
        migrations.CreateModel(
            name='Profile',
            fields=[
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='profile', serialize=False, to=settings.AUTH_USER_MODEL)),
                ('time_zone', models.CharField(default=accounts.models.site_time_zone, help_text="The newsroom page shows times in this zone: an IANA name such as Europe/Paris or America/New_York. The site's own zone until you choose one.", max_length=64, validators=[accounts.models.validate_time_zone])),
            ],
            options={
                'verbose_name': 'preferences',
                'verbose_name_plural': 'preferences',
            },
        ),
    ]
