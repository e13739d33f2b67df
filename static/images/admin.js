// An image's admin page: the Copy button beside its Markdown.
'use strict';
document.addEventListener('click', function(event) {
    const button = event.target.closest('button.image-copy');
    if (!button) {
        return;
    }
    const field = button.parentElement.querySelector('input.image-markdown');
    field.select();
    if (navigator.clipboard) {
        navigator.clipboard.writeText(field.value).then(() => { button.textContent = 'Copied'; });
    }
});
