// Writing in the admin's Markdown fields (images.admin.MarkdownWriting), with no inline script: every URL
// comes from the textarea's data- attributes.
// - Beside each field, a preview the server renders as the public page does (publishing.previews), asked
//   for a moment after the editor stops typing; a slower answer never overwrites a newer one.
// - An image file dropped or pasted into a field that shows images (data-upload-url) is uploaded through the
//   images app, its alt text asked for first; its ![alt](image:ID) replaces a placeholder put at the cursor.
//   A refusal (SVG, another type, too large, too many pixels, a copy) is said under the field.
// - Ctrl/Cmd+S is "Save and continue editing".
'use strict';
{
    const DELAY = 400;  // ms after the last keystroke
    const previews = new WeakMap();  // textarea -> {timer, controller, sequence}
    let uploads = 0;

    function csrfToken(form) {
        const input = form && form.querySelector('input[name=csrfmiddlewaretoken]');
        return input ? input.value : '';
    }

    function parts(area) {
        const field = area.closest('.markdown-field');
        return {
            preview: field && field.querySelector('.markdown-preview'),
            status: field && field.querySelector('.markdown-writing-status'),
        };
    }

    function say(area, message, failed) {
        const {status} = parts(area);
        if (status) {
            status.textContent = message;
            status.classList.toggle('markdown-writing-refused', Boolean(failed));
        }
    }

    // The answer as {ok, data}. One that is not JSON is the sign-in page (the session ended: fetch followed the
    // admin's redirect) or a proxy's error page; either becomes a message, and nothing typed is lost.
    function answer(response) {
        const json = (response.headers.get('Content-Type') || '').startsWith('application/json');
        if (!json) {
            const error = response.redirected
                ? 'Your session has ended: sign in again in another tab; your text is still here.'
                : `The server answered ${response.status} ${response.statusText}.`;
            return Promise.resolve({ok: false, data: {error}});
        }
        return response.json().then((data) => ({ok: response.ok, data}));
    }

    function post(url, body, form, signal) {
        return fetch(url, {method: 'POST', body, signal, credentials: 'same-origin',
                           headers: {'X-CSRFToken': csrfToken(form), 'Accept': 'application/json'}})
            .then(answer);
    }

    function previewable(area) {
        return area.matches('textarea[data-preview-url]') && !area.name.includes('__prefix__');
    }

    function refresh(area) {
        const {preview} = parts(area);
        if (!preview || !area.form) {
            return;
        }
        const own = previews.get(area) || {sequence: 0};
        previews.set(area, own);
        if (own.controller) {
            own.controller.abort();
        }
        own.controller = new AbortController();
        const sequence = ++own.sequence;
        // The whole form, so what the text cites is looked up as the form stands (rows added, not yet saved).
        const body = new FormData(area.form);
        for (const [key, value] of [...body.entries()]) {
            if (value instanceof File) {
                body.delete(key);
            }
        }
        body.set('field', area.name);
        preview.setAttribute('aria-busy', 'true');
        post(area.dataset.previewUrl, body, area.form, own.controller.signal).then(({ok, data}) => {
            if (sequence !== own.sequence) {
                return;
            }
            preview.removeAttribute('aria-busy');
            preview.classList.toggle('markdown-preview-failed', !ok);
            if (ok) {
                preview.innerHTML = data.html;  // sanitised by the page's own allow-list (publishing.rendering)
            } else {
                preview.textContent = data.error;
            }
        }).catch((error) => {
            if (error.name !== 'AbortError' && sequence === own.sequence) {
                preview.removeAttribute('aria-busy');
                preview.classList.add('markdown-preview-failed');
                preview.textContent = 'No preview: the server could not be reached. Your text is still here.';
            }
        });
    }

    function later(area) {
        const own = previews.get(area) || {sequence: 0};
        previews.set(area, own);
        clearTimeout(own.timer);
        own.timer = setTimeout(() => refresh(area), DELAY);
    }

    function insertAtCursor(area, text) {
        const start = area.selectionStart ?? area.value.length;
        const end = area.selectionEnd ?? start;
        area.setRangeText(text, start, end, 'end');
        area.focus();
    }

    function replace(area, placeholder, text) {
        const at = area.value.indexOf(placeholder);
        if (at >= 0) {
            area.setRangeText(text, at, at + placeholder.length, 'preserve');
        }
        area.dispatchEvent(new Event('input', {bubbles: true}));  // previewed, and seen as typed
    }

    function upload(area, file) {
        const name = file.name || 'the pasted image';
        const alt = window.prompt(`Alt text for ${name}: what it shows, for readers who cannot see it.`);
        if (alt === null || !alt.trim()) {
            say(area, `${name} was not uploaded: an image needs its alt text.`, true);
            return;
        }
        const placeholder = `![Uploading ${name} (${++uploads})…]()`;
        // Blank lines around, as the image picker inserts (a lone image may become a figure with its caption).
        const inserted = '\n\n' + placeholder + '\n\n';
        insertAtCursor(area, inserted);
        const body = new FormData();
        body.append('files', file, file.name || 'pasted.png');
        body.append('alt', alt.trim());
        say(area, `Uploading ${name}…`);
        post(area.dataset.uploadUrl, body, area.form).then(({ok, data}) => {
            if (ok) {
                replace(area, placeholder, data.markdown);
            } else {
                replace(area, inserted, '');  // the text as it was
            }
            say(area, ok ? `Uploaded ${name}: ${data.markdown}` : `${name} was not uploaded. ${data.error}`, !ok);
        }).catch(() => {
            replace(area, inserted, '');
            say(area, `${name} was not uploaded: the server could not be reached.`, true);
        });
    }

    function filesFor(event, transfer) {
        const area = event.target.closest && event.target.closest('textarea[data-upload-url]');
        const files = area && transfer ? [...transfer.files] : [];
        return {area, files};
    }

    document.addEventListener('input', (event) => {
        if (event.target.matches && previewable(event.target)) {
            later(event.target);
        }
    });

    document.addEventListener('paste', (event) => {
        const {area, files} = filesFor(event, event.clipboardData);
        if (files.length) {
            event.preventDefault();
            files.forEach((file) => upload(area, file));
        }
    });

    document.addEventListener('dragover', (event) => {
        const area = event.target.closest && event.target.closest('textarea[data-upload-url]');
        if (area && event.dataTransfer && [...event.dataTransfer.types].includes('Files')) {
            event.preventDefault();  // allows the drop
        }
    });

    document.addEventListener('drop', (event) => {
        const {area, files} = filesFor(event, event.dataTransfer);
        if (files.length) {
            event.preventDefault();
            files.forEach((file) => upload(area, file));
        }
    });

    // In the preview, a citation shows what it cites, and other links open in a new tab: never away from the form.
    document.addEventListener('click', (event) => {
        const link = event.target.closest && event.target.closest('.markdown-preview a[href]');
        if (!link) {
            return;
        }
        event.preventDefault();
        if (link.classList.contains('citation')) {
            const number = link.getAttribute('href').replace('#ref-', '');
            const cited = link.closest('.markdown-preview').querySelector(`.preview-references li[data-number="${CSS.escape(number)}"]`);
            if (cited) {
                cited.classList.add('preview-highlight');
                cited.scrollIntoView({block: 'nearest'});
                setTimeout(() => cited.classList.remove('preview-highlight'), 1500);
            }
        } else {
            window.open(link.href, '_blank', 'noopener');
        }
    });

    document.addEventListener('keydown', (event) => {
        if (!(event.ctrlKey || event.metaKey) || event.altKey || event.key.toLowerCase() !== 's') {
            return;
        }
        const button = document.querySelector('#content-main form input[name="_continue"]');
        if (button) {
            event.preventDefault();
            button.click();
        }
    });

    function start() {
        document.querySelectorAll('textarea[data-preview-url]').forEach((area) => {
            if (previewable(area)) {
                refresh(area);
            }
        });
    }

    if (document.readyState === 'loading') {
        document.addEventListener('DOMContentLoaded', start);
    } else {
        start();
    }
}
