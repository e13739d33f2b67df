"""The conflict panel of a change form whose save was refused: both values of each field, side by side."""
from django import forms
from django.utils.html import format_html, format_html_join


class ConflictPanel(forms.Widget):
    """Both values of each conflicting field side by side, with a "take theirs" choice; hidden otherwise."""

    conflicts = ()  # (label, radio name, yours, theirs), set by EditConflictAdmin.render_change_form

    @property
    def is_hidden(self):
        return not self.conflicts

    def render(self, name, value, attrs=None, renderer=None):
        if not self.conflicts:
            return ""
        rows = format_html_join("", (
            '<tr><th scope="row">{}</th><td><pre class="edit-conflict">{}</pre></td>'
            '<td><pre class="edit-conflict">{}</pre></td><td>'
            '<label><input type="radio" name="{}" value="mine" checked> keep mine (as in the field, edited or not)'
            '</label><br><label><input type="radio" name="{}" value="theirs"> take theirs</label></td></tr>'
        ), ((label, yours, theirs, radio, radio) for label, radio, yours, theirs in self.conflicts))
        return format_html('<table class="edit-conflicts"><thead><tr><th>Field</th><th>Yours</th>'
                           '<th>Theirs (saved meanwhile)</th><th>Save again with</th></tr></thead>'
                           '<tbody>{}</tbody></table>', rows)

    def value_from_datadict(self, data, files, name):
        return ""
