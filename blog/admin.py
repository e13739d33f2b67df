"""Editorial admin for the blog."""
from django import forms
from django.apps import apps
from django.contrib import admin
from django.db.models import Count, Q
from taggit.models import Tag

from api.responses import detail_json, etag_of
from images.admin import ImagePickerMixin
from publishing.admin import AutocompleteInlineMixin, LoadedAutocompleteFormSet, WorkflowAdmin
from publishing.changelists import (
    AutocompleteFilter, AutocompleteFiltersMixin, LargeListMixin, indexed_search, is_autocomplete,
)
from publishing.edit_conflicts import EditConflictAdmin

from .models import Author, Post, PostAuthor, TaggedPost
from .schemas import PostOut


class AuthorForm(forms.ModelForm):
    def clean_handle(self):  # one namespace with topics and the fixed actors (fediverse/handles.py)
        apps.get_app_config("fediverse").check_handle(self.cleaned_data["handle"], instance=self.instance)
        return self.cleaned_data["handle"]


@admin.register(Author)
class AuthorAdmin(EditConflictAdmin, admin.ModelAdmin):
    list_display = ["name", "handle", "user", "post_count"]
    ordering = ["name"]  # the Count annotation drops Meta.ordering, and autocomplete pages need an order
    search_fields = ["name", "handle", "bio"]
    list_select_related = ["user"]
    prepopulated_fields = {"slug": ["name"]}
    raw_id_fields = ["user"]
    view_on_site = True
    form = AuthorForm

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(post_total=Count("post_links"))

    @admin.display(description="posts", ordering="post_total")
    def post_count(self, obj) -> int:
        return obj.post_total


POSITION_HELP = "Byline order, lowest first. Leave empty to place the author after the others, in row order."


class BylineFormSet(LoadedAutocompleteFormSet):
    """Rows without a position (every added row starts empty) go after the others, in the order
    shown, so the byline reads as the editor entered it; typed positions still decide."""

    def clean(self):
        super().clean()
        rows = [form for form in self.forms if form.cleaned_data and not self._should_delete_form(form)]
        taken = [form.cleaned_data["position"] for form in rows if form.cleaned_data.get("position") is not None]
        next_position = max(taken, default=-1) + 1
        for form in rows:
            if form.cleaned_data.get("position") is None:
                form.cleaned_data["position"] = form.instance.position = next_position
                next_position += 1


class PostAuthorInline(AutocompleteInlineMixin, admin.TabularInline):
    model = PostAuthor
    formset = BylineFormSet
    fields = ["position", "author"]
    autocomplete_fields = ["author"]
    ordering = ["position", "id"]
    min_num = 1
    extra = 0
    verbose_name = "author"
    verbose_name_plural = "authors (in byline order)"

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "position":
            field.required, field.initial, field.help_text = False, None, POSITION_HELP
        return field


class TaggedPostInline(AutocompleteInlineMixin, admin.TabularInline):
    """Tags as rows with autocomplete, rather than taggit's comma-separated text box."""

    model = TaggedPost
    autocomplete_fields = ["tag"]
    extra = 1
    verbose_name = "tag"
    verbose_name_plural = "tags"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("content_object")  # its __str__ names the post


class AuthorFilter(AutocompleteFilter):
    title, parameter_name = "author", "authors__id__exact"
    source, lookup = "blog.post.authors", "post_authors__author_id"


class TagFilter(AutocompleteFilter):
    title, parameter_name = "tag", "tags__id__exact"
    source, lookup = "blog.post.tags", "tagged_items__tag_id"


@admin.register(Post)
class PostAdmin(AutocompleteFiltersMixin, LargeListMixin, ImagePickerMixin, WorkflowAdmin):
    preview_url_name = "blog:preview"
    image_picker_fields = ("body",)
    raw_id_fields = ["lead_image"]  # its lookup is the images list, with thumbnails
    list_display = ["title", "byline", "status_badge", "published_at", "tag_list", "updated_at"]
    list_filter = ["status", AuthorFilter, TagFilter, "published_at"]
    # Searched by get_search_results through indexes: full text (title, excerpt, body), the exact
    # slug, and the posts of an author named exactly (handle or name); never a scan of bodies.
    search_fields = ["title", "excerpt", "body", "slug", "authors__handle", "authors__name"]
    search_help_text = "Words of the title, excerpt or body (as the site search finds them), a slug, or an author's handle."
    prepopulated_fields = {"slug": ["title"]}
    inlines = [PostAuthorInline, TaggedPostInline]
    fieldsets = [
        (None, {"fields": ["title", "slug", "disclosure", "excerpt", "lead_image", "body"]}),
        ("Publication", {"fields": ["status", "published_at"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).with_listing_data()

    def edit_version(self, obj) -> str:
        """The ETag the API names for this post (``If-Match`` there, the change form's version here)."""
        return etag_of(detail_json(PostOut, Post.objects.with_listing_data().get(pk=obj.pk)))

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        exact = Q(slug=term)
        authors = list(Author.objects.filter(Q(handle__iexact=term.lstrip("@")) | Q(name__iexact=term))
                       .values_list("pk", flat=True)) if term else []
        if authors:
            exact |= Q(pk__in=PostAuthor.objects.filter(author_id__in=authors).values("post_id"))
        return indexed_search(queryset, term, exact=exact, prefix=is_autocomplete(request)), False

    @admin.display(description="authors")
    def byline(self, obj) -> str:
        return ", ".join(str(author) for author in obj.ordered_authors())

    @admin.display(description="tags")
    def tag_list(self, obj) -> str:
        return ", ".join(tag.name for tag in obj.tags.all())


# taggit's own TagAdmin edits its generic TaggedItem rows and offers a "merge tags"
# action whose view checks no permission and never touches our TaggedPost rows; posts
# carry their tags through TaggedPost, so the admin shows that instead.
admin.site.unregister(Tag)


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "post_count"]
    ordering = ["name"]
    search_fields = ["name"]
    prepopulated_fields = {"slug": ["name"]}

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(post_total=Count("blog_taggedpost_items"))

    @admin.display(description="posts", ordering="post_total")
    def post_count(self, obj) -> int:
        return obj.post_total
