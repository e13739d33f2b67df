"""render_github_markdown: GitHub bodies through cmark-gfm, sanitised by the same allow-list as render_markdown."""
import json

import pytest

from publishing.rendering import render_github_markdown, render_markdown

from .ingestion.replay import load

RECORDED_BODIES = [pull["body"] or "" for pull in json.loads(load("Issue131.testGetPullsWithOrgHeadUser")[0].body)]
HOSTILE = [
    '<script>alert("x")</script>',
    '<img src=x onerror="alert(1)">',
    '[click](javascript:alert(1))',
    '<a href="javascript:alert(1)">x</a>',
    '<a href="https://example.com" onclick="steal()">ok</a>',
    '<iframe src="https://evil.example"></iframe>',
    '<style>body{display:none}</style>',
    '<svg><script>alert(1)</script></svg>',
    '![x](javascript:alert(1))',
    '<form action="https://evil.example"><input name=a></form>',
    '[a](<data:text/html,<script>alert(1)</script>>)',
]


@pytest.mark.parametrize("body", RECORDED_BODIES)
def test_recorded_pull_request_bodies_render_as_render_markdown_renders_them(body):
    assert render_github_markdown(body) == render_markdown(body)


@pytest.mark.parametrize("body", HOSTILE)
def test_hostile_markup_is_sanitised(body):
    html = render_github_markdown(body)
    for dangerous in ("<script", "onerror", "onclick", '="javascript:', "<iframe", "<style", "<form", "<input",
                      '="data:', "<svg"):
        assert dangerous not in html


def test_github_flavour_tables_strikethrough_and_raw_html():
    html = render_github_markdown("| a | b |\n|:-|-:|\n| 1 | 2 |\n\n~~gone~~\n\n<details><summary>S</summary>\n\n*x*\n</details>")
    assert '<th align="left">a</th>' in html and '<td align="right">2</td>' in html
    assert "<del>gone</del>" in html
    assert "<details><summary>S</summary>" in html and "<em>x</em>" in html


def test_a_fenced_block_naming_a_language_is_highlighted_as_before():
    body = "Before\n\n```python\nx = 1\n```\n"
    assert render_github_markdown(body) == render_markdown(body)
    assert "<span" in render_github_markdown(body)


def test_empty_and_missing_bodies():
    assert render_github_markdown("") == render_github_markdown(None) == ""
