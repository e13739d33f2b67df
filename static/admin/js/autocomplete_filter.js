'use strict';
// The admin's autocomplete filters (publishing/changelists.py): choosing an object filters the list.
{
    const $ = django.jQuery;
    $(document).on('change', 'form.autocomplete-filter select', function() {
        this.form.submit();
    });
}
