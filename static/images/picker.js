// "Insert image…" under a Markdown field (images.admin.MarkdownWithImages). Django's lookup popup
// (RelatedObjectLookups.js) puts the chosen image's id in the hidden input and triggers a jQuery
// change event; this asks the admin for that image's Markdown and inserts it at the cursor.
'use strict';
{
    const $ = django.jQuery;
    $(document).on('change', 'input.image-picker-value', function() {
        const picked = this;
        const target = document.getElementById(picked.dataset.target);
        const url = picked.dataset.markdownUrl.replace(/\/0\/markdown\/$/, '/' + encodeURIComponent(picked.value) + '/markdown/');
        fetch(url, {credentials: 'same-origin'}).then((response) => response.ok ? response.text() : Promise.reject(response))
            .then(function(markdown) {
                const start = target.selectionStart ?? target.value.length;
                const end = target.selectionEnd ?? start;
                const text = '\n\n' + markdown + '\n\n';
                target.setRangeText(text, start, end, 'end');
                target.focus();
                picked.value = '';
            });
    });
}
