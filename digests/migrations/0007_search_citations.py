"""The reader search's narrow copy of citations (vector column and triggers on PostgreSQL only)."""

from django.db import migrations, models

from publishing.search_migrations import add_citation_search


class Migration(migrations.Migration):

    dependencies = [
        ('digests', '0006_rendered_parts'),
    ]

    operations = [
        migrations.CreateModel(
            name='SearchCitation',
            fields=[
                ('citation_id', models.BigIntegerField(primary_key=True, serialize=False)),
                ('digest_id', models.BigIntegerField()),
                ('reference_id', models.BigIntegerField()),
                ('status', models.CharField(max_length=20)),
                ('date', models.DateField()),
                ('published_at', models.DateTimeField(null=True)),
            ],
            options={
                'indexes': [models.Index(condition=models.Q(('status', 'published')), fields=['-date', '-published_at', '-digest_id'], name='searchcitation_published')],
            },
        ),
        migrations.RunPython(*add_citation_search()),
    ]
