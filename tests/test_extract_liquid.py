"""Jekyll pages read as the text their readers see: Liquid tags and outputs go."""

from __future__ import annotations

from kbctl.extract.liquid import liquid_to_markdown

PAGE = """\
## Install {{ site.version }}

{% include note.html content="Back up first." %}
{%- if page.beta -%}Beta only.{%- endif -%}

{% highlight ruby linenos %}
puts "hi"
{% endhighlight %}

{% raw %}Write {{ page.title }} or {% if x %}.{% endraw %}
{% comment %}
An editor's note.
{% endcomment %}
See [the guide]({% link guide.md %}) and {{ 'x' | upcase }}.
Read [the news]({%- post_url 2024-05-01-hello -%}) and [more]({% link  %}).
"""


def test_tags_and_outputs_go_and_what_readers_see_stays() -> None:
    md = liquid_to_markdown(PAGE)
    assert md.startswith("## Install \n")
    assert "Back up first." in md and "note.html" not in md
    assert "Beta only." in md and "endif" not in md
    assert '```ruby\nputs "hi"\n```' in md
    assert "Write {{ page.title }} or {% if x %}." in md and "raw" not in md
    assert "editor's note" not in md
    assert "See [the guide](guide.md) and ." in md
    assert "Read [the news](2024-05-01-hello) and [more]()." in md


def test_text_without_liquid_is_untouched_and_hostile_text_ends() -> None:
    assert liquid_to_markdown("plain {text}") == "plain {text}"
    assert liquid_to_markdown("{% raw %}never closed {{ x }}") == "never closed {{ x }}"
    assert liquid_to_markdown("{% comment %}never closed") == "never closed"
    hostile = "{%" * 100_000 + "{{ " + "a" * 100_000
    assert liquid_to_markdown(hostile) == hostile
