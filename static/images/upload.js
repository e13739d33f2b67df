// The images upload page (templates/admin/images/image/upload.html): one alt text field per chosen
// file, labelled with the file's name, in the order the browser sends the files.
// Loaded in the page's head: it waits for the form.
'use strict';
window.addEventListener('DOMContentLoaded', function() {
    const input = document.querySelector('#image-upload input[type=file]');
    const list = document.getElementById('image-alts');
    if (input && list) {
        input.addEventListener('change', function() {
            const typed = Array.from(list.querySelectorAll('input[name=alt]'), (field) => field.value);
            list.querySelectorAll('.image-alt').forEach((row) => row.remove());
            Array.from(input.files).forEach(function(file, index) {
                const row = document.createElement('div');
                row.className = 'image-alt';
                const label = document.createElement('label');
                label.htmlFor = 'id_alt_' + index;
                label.className = 'required';
                label.textContent = 'Alt text for ' + file.name + ':';
                const field = document.createElement('input');
                Object.assign(field, {type: 'text', name: 'alt', id: 'id_alt_' + index, maxLength: 300,
                                      className: 'vTextField', value: typed[index] || ''});
                row.append(label, ' ', field);
                list.append(row);
            });
        });
    }
});
