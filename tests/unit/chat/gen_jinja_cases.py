"""Regenerates jinja_cases.inc: the expected output of each unit-test template, rendered by
Python's jinja2 the way Hugging Face transformers renders chat templates.

    ~/.cache/lumen/venv/bin/python tests/unit/chat/gen_jinja_cases.py > tests/unit/chat/jinja_cases.inc

The expectations come from jinja2 alone, never from Lumen.
"""
import datetime
import json

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def hf_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    return env


groups = {
 "Expressions": [
  ("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 10 / 2 }}", {}),
  ("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-5 }} {{ 2.5e-4 }} {{ 1e16 }} {{ 1e15 }} {{ -0.0 }} {{ 3.14159 }}", {}),
  ("{{ 'a' ~ 1 ~ none ~ true ~ 2.0 }} {{ 'ab' * 3 }} {{ [1] + [2] }}", {}),
  ("{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }} {{ 2 not in [1, 3] }} {{ 'k' in {'k': 1} }}", {}),
  ("{{ not true or true }} {{ 1 and 'x' }} {{ 0 or none }} {{ '' or 'd' }} {{ 'y' if 0 else 'n' }}|{{ 'x' if false }}|", {}),
  ("{{ [1, 2.5, 'a', none, true, (1,), {'k': 'v'}] }} {{ (1, 2) }} {{ () }} {{ {} }} {{ \"it's\" }} {{ ['it\\'s', 'say \"hi\"'] }}", {}),
  ("{{ s[0] }}{{ s[-1] }}|{{ s[1:3] }}|{{ s[::-1] }}|{{ s[5] }}|{{ l[1:] }}|{{ l[-2:] }}|{{ l[::2] }}|{{ l[10] }}|", {"s": "héllo", "l": [1, 2, 3, 4]}),
  ("{{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ m.items() | list }} {{ m.get('role') }} {{ m.get('x', 'dflt') }} {{ m.keys() | list }}", {"m": {"role": "user", "content": "hi"}}),
  ("{{ \"a\\nb\\tc\\\\d\\x41\\u00e9\" }}|{{ 'con' 'cat' }}|{{ 1_000 }}", {}),
 ],
 "Filters": [
  ("{{ '  x  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'héllo' | length }}|{{ [1, 2] | count }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}", {}),
  ("{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ v | tojson(separators=(',', ':')) }}|{{ v | tojson(sort_keys=true) }}|{{ v | tojson(ensure_ascii=true) }}", {"v": {"b": [1, 2.5, None, True], "a": "é\"<>&'\n\u0001😀", "e": {}, "l": []}}),
  ("{{ x | default('d') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [3, 1, 2] | first }} {{ 'abc' | last }}", {}),
  ("{{ [1, 2, 3] | sum }} {{ '3' | int + 1 }} {{ '2.5' | float }} {{ 'x' | int }} {{ [1, 1, 2] | unique | list }} {{ -3 | abs }} {{ [1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ ['b', 'A', 'c'] | sort }}", {}),
  ("{{ ms | selectattr('role', 'equalto', 'user') | list | length }} {{ ms | map(attribute='role') | join(', ') }} {{ ms | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ ['a', 'b'] | map('upper') | join }}", {"ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}),
  ("{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %} {{ d | dictsort }} {{ 'a b' | replace(' ', '_') }} {{ 'ab\\ncd' | indent(2) }}|{{ 'ab\\ncd' | indent(2, true) }} {{ 3 | string ~ 1 }}", {"d": {"z": 1, "a": [1, 2]}}),
 ],
 "Tests": [
  ("{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }}", {}),
  ("{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ none is not none }} {{ 'a' is equalto 'a' }} {{ 1 is eq(1) }} {{ 'abc' is lower }} {{ 2 is in [1, 2] }} {{ x is iterable }}", {}),
 ],
 "StringMethods": [
  ("{{ 'a,b,,c'.split(',') }} {{ '  a b  c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'x</think>y</think>z'.split('</think>')[-1] }}", {}),
  ("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ ' x '.strip() }}|{{ ' x '.lstrip() }}|{{ ' x '.rstrip() }}|{{ 'aXbX'.replace('X', '-') }} {{ 'héllo'.find('l') }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }} {{ 'hi {} {}'.format(1, 'x') }}", {}),
 ],
 "Statements": [
  ("{% for m in ms %}{{ loop.index }}/{{ loop.length }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }} {% endfor %}", {"ms": ["a", "b", "c"]}),
  ("{% for x in [1, 2, 3, 4] if x is odd %}{{ loop.index }}:{{ x }} {% else %}none{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}", {}),
  ("{% for x in [1, 2, 3, 4, 5] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
  ("{% set ns = namespace(total=0, s='') %}{% for i in range(4) %}{% set ns.total = ns.total + i %}{% set local = i %}{% endfor %}{{ ns.total }}[{{ local }}]", {}),
  ("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}[{{ x }}]{% if true %}{% set y = 2 %}{% endif %}{{ y }}", {}),
  ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', punct='?') }} {{ greet(name='c') }}", {}),
  ("{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set blk %} in {{ a }} {% endset %}[{{ blk }}]{% set t | trim %}  t  {% endset %}[{{ t }}]{% filter upper %}up {{ 'x' }}{% endfilter %}", {}),
  ("{% if a %}A{% elif b %}B{% else %}C{% endif %}{% if not a and not b %}N{% endif %}", {"b": True}),
  ("{% raw %}{{ not parsed }}{% endraw %} {{ '{{ x }}' }} {{ c }}", {"c": "{% if %} {{ y }}"}),
 ],
 "Whitespace": [
  ("  {% if true %}\n  x\n  {% endif %}\n  {{ 'y' }}  \n{# c #}\nz\n", {}),
  ("a  {%- if true -%}  b  {%- endif -%}  c\n{{- ' d ' -}}\n e", {}),
  ("x\n    {%+ if true %}plus{% endif %}\n  {%- if true %}  minus{% endif -%}\n  after", {}),
  ("a {#- comment -#} b {# c2 #}\nc\n\n", {}),
  ("line1\r\nline2\r{% if true %}\r\nin{% endif %}\n", {}),
  ("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\n", {}),
 ],
}


def cxx(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\": out.append("\\\\")
        elif ch == '"': out.append('\\"')
        elif ch == "\n": out.append("\\n")
        elif ch == "\t": out.append("\\t")
        elif o < 0x20 or o == 0x7f: out.append("\\%03o" % o)
        else: out.append(ch)
    return '"' + "".join(out) + '"'


if __name__ == "__main__":
    env = hf_environment()
    print("// Generated by gen_jinja_cases.py from jinja2 " + jinja2.__version__ + "; do not edit.")
    for group, cases in groups.items():
        print(f"#define LUMEN_JINJA_CASES_{group.upper()} \\")
        for template, context in cases:
            expected = env.from_string(template).render(**context)
            ctx = json.dumps(context, ensure_ascii=False)
            print(f"  {{{cxx(template)}, {cxx(ctx)}, {cxx(expected)}}}, \\")
        print()
