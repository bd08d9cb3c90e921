"""The text the real-model tokenizers are checked on (tests/golden/tokenizer/real_models.json).

Written for Lumen: each case aims at one place where tokenizers tend to differ (pre-tokenizer
regex classes, digit splitting, whitespace runs, byte fallback, special-token look-alikes,
dummy-prefix handling). Every case is valid UTF-8; invalid bytes are covered by the C++ tests.
"""

ENGLISH = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "A lighthouse keeper counted the ships that passed, and wrote each name in a ledger.",
    "Tokenizers turn text into numbers; detokenizers turn numbers back into text.",
    "Is it raining? No! It's sunny... mostly.",
    "ALL CAPS SENTENCE WITH SHOUTING",
    "MiXeD cAsE wOrDs and camelCaseIdentifiers and snake_case_names",
    "hyphen-ated words, semi;colons: and (parenthetical) [bracketed] {braced} remarks",
    "\"Double quotes\" and 'single quotes' and `backticks` and \u201ccurly quotes\u201d",
    "an ellipsis\u2026 an em dash \u2014 an en dash \u2013 a bullet \u2022 done",
    "e.g. i.e. etc. Mr. Dr. St. vs.",
]

CONTRACTIONS = [
    "it's they're we've I'm you'll she'd don't",
    "IT'S THEY'RE WE'VE I'M YOU'LL SHE'D DON'T",
    "It'S tHey'Re we'Ve i'M You'Ll she'D",
    "'s 't 're 've 'm 'll 'd",
    "the dogs' bowls and James's hat",
    "rock 'n' roll, o'clock, y'all'd've",
    "quote:'hello' 'world'",
]

CODE = [
    "def add(a, b):\n    return a + b\n",
    "class Stack:\n\tdef __init__(self):\n\t\tself.items = []\n\n\tdef push(self, x):\n\t\tself.items.append(x)\n",
    "#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 42);\n    return 0;\n}\n",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}",
    "const f = async (x) => { await sleep(100); return x?.y ?? 0; };",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name ORDER BY 2 DESC;",
    "for i in $(seq 1 10); do echo \"$i\" | tee -a log.txt; done",
    "if (a != b && c <= d || e >= f) { x += 1; y -= 2; z *= 3; w /= 4; }",
    "<div class=\"row\"><span id='x'>text</span></div>",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
    "    indented with four spaces\n        and eight\n            and twelve",
    "\t\tdouble tab\n\t\t\ttriple tab\n",
    "x=1;y=2;z=x<<y>>1|0xFF&~0b1010^0o17",
    "// comment\n/* block\n   comment */\n# hash comment\n-- sql comment",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
    "@decorator\ndef f(*args, **kwargs) -> None: ...",
]

CJK = [
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002",
    "\u673a\u5668\u5b66\u4e60\u6a21\u578b\u9700\u8981\u5927\u91cf\u7684\u6570\u636e\u3002",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002",
    "\u3072\u3089\u304c\u306a\u3068\u30ab\u30bf\u30ab\u30ca\u3068\u6f22\u5b57\u3092\u6df7\u305c\u305f\u6587\u7ae0",
    "\uff8a\uff9d\uff76\uff78\uff76\uff80\uff76\uff85 half-width katakana",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc744 \ud1a0\ud070\ud654\ud569\ub2c8\ub2e4.",
    "\uc548\ub155\ud558\uc138\uc694! \ubc18\uac11\uc2b5\ub2c8\ub2e4.",
    "\u4e2d\u6587English\u6df7\u5408text\u65e5\u672c\u8a9e\ud55c\uad6d\uc5b4",
    "\uff11\uff12\uff13\uff14\uff15 full-width digits \uff21\uff22\uff23",
    "\u300c\u5f15\u7528\u300d\u3010\u62ec\u5f27\u3011\u300a\u4e66\u540d\u300b",
]

EMOJI = [
    "\U0001F600",
    "I love pizza \U0001F355\U0001F355\U0001F355!",
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 family",
    "\U0001F44D\U0001F3FB\U0001F44D\U0001F3FC\U0001F44D\U0001F3FD\U0001F44D\U0001F3FE\U0001F44D\U0001F3FF",
    "\U0001F3F3\uFE0F\u200D\U0001F308 \U0001F1EF\U0001F1F5 \U0001F1FA\U0001F1F8",
    "\u2764\uFE0F \u2728 \u2705 \u26A0\uFE0F",
    "\U0001F9D1\u200D\U0001F4BB writes code",
    "text\U0001F525text\U0001F680",
]

WHITESPACE = [
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\n\n\n\n",
    "\r\n",
    "line one\r\nline two\r\n",
    " leading space",
    "trailing space ",
    "   three leading, three trailing   ",
    "a  b   c    d     e",
    "tab\tseparated\tvalues\t",
    "mixed \t \n \r\n  \t\t  end",
    " \n ",
    "word\n\n\nword",
    "                                                  fifty spaces",
    "\u00a0non-breaking\u00a0spaces\u2003em space\u3000ideographic",
    "\v\f vertical tab and form feed",
]

SCRIPTS = [
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u041a\u0430\u043a \u0434\u0435\u043b\u0430?",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "English \u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea",
    "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u0570\u0561\u0575\u0565\u0580\u0565\u0576 \u12a0\u121b\u122d\u129b",
    "na\u00efve caf\u00e9 r\u00e9sum\u00e9 \u00fcber Stra\u00dfe \u00e5ngstr\u00f6m",
    "\u1e9e\u00df \u0130i \u0131I \u01c5 \ufb01 \u2126",
]

NUMBERS = [
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345678901234567890",
    "3.14159 2.71828 -0.5 +1e-9",
    "1,000,000 and 1.000.000 and 1 000 000",
    "Call 555-0123 or (555) 012-3456.",
    "2024-01-31T23:59:59Z",
    "v1.2.3-rc.4+build.56",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \u00bd \u00b2 \u2460 \u2167",
    "abc123def456",
]

URLS_MARKDOWN = [
    "https://example.com/path/to/page?query=1&other=two#section",
    "mailto:someone@example.org and ftp://files.example.net/pub/",
    "# Heading\n\n## Subheading\n\n- item one\n- item two\n  - nested\n",
    "**bold** _italic_ ~~strike~~ `code` [link](http://x.y)",
    "| col a | col b |\n|---|---|\n| 1 | 2 |",
    "```python\nprint('hi')\n```",
    "> quoted line\n> another\n\n1. first\n2. second",
    "----------------------------------------",
    "========",
    "!!!???...,,,;;;:::",
]

SPECIAL_LOOKALIKES = [
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<s>",
    "</s>",
    "<s>Hello</s>",
    "<bos>text<eos>",
    "<|endoftext|>",
    "<pad><unk><mask>",
    "a<|im_start|>b<|im_end|>c",
    "<|im_start|><|im_start|>",
    "< |im_start| >",
    "<start_of_image>picture<end_of_image>",
    "  <|im_start|>  spaced  <|im_end|>  ",
]

EDGE = [
    "",
    "a",
    "A",
    ".",
    "'",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "Donaudampfschifffahrtselektrizit\u00e4tenhauptbetriebswerkbauunterbeamtengesellschaft",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "xyzzyqwfpgjluy" * 6,
    "e\u0301 a\u0300 o\u0308 n\u0303 combining",
    "\u00e9 vs e\u0301 (composed vs decomposed)",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334",
    "\u0915\u094d\u200d\u0937 zero width joiner, zero\u200bwidth\u200bspace, \ufeffBOM",
    "control\u0001chars\u0002here\u001b[0m\u007f",
    "\u0000nul at start",
    "tab\u0009bell\u0007backspace\u0008",
    "\u2028line separator\u2029paragraph separator\u0085next line",
    "\U0010FFFF\U000E0001\uFFFD\uE000 private and odd code points",
    "\U0001D400\U0001D401\U0001D402 math bold \U00013000 hieroglyph",
]

CASES = (ENGLISH + CONTRACTIONS + CODE + CJK + EMOJI + WHITESPACE + SCRIPTS + NUMBERS
         + URLS_MARKDOWN + SPECIAL_LOOKALIKES + EDGE)

# Cases that are also tokenized with add_special / parse_special on: the look-alikes, plus a
# few plain ones so that the BOS rule is seen on ordinary text, whitespace and the empty string.
SPECIAL_MODE_CASES = SPECIAL_LOOKALIKES + ["", " ", "Hello world", " leading space", "\n", CJK[0]]
