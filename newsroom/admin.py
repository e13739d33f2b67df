"""The retention rules in the admin: each table's rule, its setting, and when it last ran."""
from django.contrib import admin

from . import retention
from .models import PruneRecord

RULES = {rule.name: rule for rule in retention.RULES}


@admin.register(PruneRecord)
class PruneRecordAdmin(admin.ModelAdmin):
    list_display = ["rule", "table", "keep", "action", "keeps", "last_finished_at", "last_pruned"]
    list_display_links = None

    def changelist_view(self, request, extra_context=None):
        """Every rule is listed, also before its first run (beat runs them hourly)."""
        PruneRecord.objects.bulk_create([PruneRecord(rule=name) for name in RULES], ignore_conflicts=True)
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(rule__in=RULES)

    @admin.display(description="table")
    def table(self, record) -> str:
        return RULES[record.rule].model._meta.db_table

    @admin.display(description="keeps for")
    def keep(self, record) -> str:
        rule = RULES[record.rule]
        return f"{rule.days} days ({rule.setting})"

    @admin.display(description="then")
    def action(self, record) -> str:
        return RULES[record.rule].action

    @admin.display(description="never prunes")
    def keeps(self, record) -> str:
        return RULES[record.rule].keeps

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
