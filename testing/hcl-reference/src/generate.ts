// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are HCL source, where ${ is template syntax.
// Seeded random HCL inputs for the differential test, built with fast-check's
// generators (fc.sample with a fixed seed, so every run compares the same
// inputs). Most inputs are well-formed files whose expressions mix the whole
// expression language over the standard variables (corpus.ts), with varied
// layout: newlines inside brackets, comments, heredoc variants. A share of them
// then gets one or two random edits, so that syntax errors and their positions
// are compared too.

import fc from "fast-check";
import { STANDARD_VARIABLES } from "./corpus.ts";

const VAR_NAMES = [...Object.keys(STANDARD_VARIABLES), "missing"];
const IDENTS = ["a", "b", "name", "v", "x_y", "with-dash", "é", "for", "if", "in", "null", "true", "_u"];
const ATTRS = ["a", "b", "c", "d", "e", "name", "v", "tags", "bar", "baz", "missing", "0"];

const ws = fc.constantFrom("", " ", "  ", "\t");
const nl = fc.constantFrom("\n", "\n\n", " # note\n", " // note\n", "\r\n", "\n  ");
const maybeNl = fc.oneof({ weight: 3, arbitrary: fc.constant("") }, { weight: 1, arbitrary: nl });
const inlineComment = fc.oneof(
  { weight: 6, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.constant(" /* c */ ") },
);

const number = fc.oneof(
  fc.integer({ min: 0, max: 20 }).map(String),
  fc.constantFrom(
    "0",
    "1",
    "2",
    "10",
    "0.5",
    "1.25",
    "3.0",
    "1e3",
    "2E-2",
    "1.5e+2",
    "007",
    "9007199254740993",
    "1e400",
    "0.1",
  ),
);

const stringChars = fc.oneof(
  {
    weight: 50,
    arbitrary: fc.constantFrom("a", "b", "x", " ", "-", "é", "e\u0301", "ß", "日", "😀", "0", "true"),
  },
  {
    weight: 18,
    arbitrary: fc.constantFrom(
      "\\n",
      "\\t",
      '\\"',
      "\\\\",
      "\\u00e9",
      "\\U0001F600",
      "$${x}",
      "%%{x}",
      "$",
      "%",
      "'",
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom("\\q", "\\u12", "\\") },
);

/** A tree of expression text; depth bounded by fast-check's `depthSize`. */
const exprArb: fc.Memo<string> = fc.memo((n: number): fc.Arbitrary<string> => {
  const leaf = fc.oneof(
    number,
    fc.constantFrom("true", "false", "null"),
    fc.constantFrom(...VAR_NAMES),
    fc.array(stringChars, { maxLength: 5 }).map((cs) => `"${cs.join("")}"`),
  );
  if (n <= 1) return leaf;
  const sub = exprArb(n - 1);
  return fc.oneof(
    { weight: 4, arbitrary: leaf },
    { weight: 2, arbitrary: template(sub) },
    { weight: 1, arbitrary: heredoc(sub) },
    { weight: 2, arbitrary: traversal(sub) },
    { weight: 1, arbitrary: splat(sub) },
    { weight: 2, arbitrary: call(sub) },
    { weight: 2, arbitrary: tuple(sub) },
    { weight: 2, arbitrary: object(sub) },
    { weight: 1, arbitrary: forExpr(sub) },
    { weight: 2, arbitrary: binary(sub) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom("-", "!"), sub).map(([op, e]) => `${op}${e}`) },
    { weight: 2, arbitrary: conditional(sub) },
    { weight: 1, arbitrary: sub.map((e) => `(${e})`) },
  );
});

function template(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const part = fc.oneof(
    { weight: 3, arbitrary: stringChars },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.boolean(), sub, fc.boolean())
        .map(([l, e, r]) => `\${${l ? "~ " : ""}${e}${r ? " ~" : ""}}`),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          sub,
          fc.array(stringChars, { maxLength: 2 }),
          fc.option(fc.array(stringChars, { maxLength: 2 })),
        )
        .map(
          ([c, a, b]) => `%{ if ${c} }${a.join("")}${b === null ? "" : `%{ else }${b.join("")}`}%{ endif }`,
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom("list", "strs", "obj", "none", "s", "nul"), fc.boolean())
        .map(([c, kv]) =>
          kv ? `%{ for k, v in ${c} }\${k}=\${v},%{ endfor }` : `%{for v in ${c}~}<\${v}>%{~ endfor}`,
        ),
    },
  );
  return fc.array(part, { maxLength: 4 }).map((ps) => `"${ps.join("")}"`);
}

function heredoc(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const line = fc
    .tuple(
      fc.constantFrom("", " ", "  ", "    ", "\t"),
      fc.array(
        fc.oneof(
          stringChars,
          sub.map((e) => `\${${e}}`),
          fc.constantFrom("\\n", "EOT", "  "),
        ),
        { maxLength: 3 },
      ),
    )
    .map(([indent, parts]) => indent + parts.join(""));
  return fc
    .tuple(
      fc.constantFrom("<<", "<<-"),
      fc.constantFrom("EOT", "END", "X_1"),
      fc.array(line, { maxLength: 4 }),
      fc.constantFrom("", "  ", "\t"),
      fc.oneof(
        { weight: 12, arbitrary: fc.constant("") },
        { weight: 1, arbitrary: fc.constantFrom(" ", "  ", "\t") },
      ),
    )
    .map(
      ([op, marker, lines, closeIndent, trailing]) =>
        `${op}${marker}\n${lines.map((l) => `${l}\n`).join("")}${closeIndent}${marker}${trailing}`,
    );
}

function traversal(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const step = fc.oneof(
    fc.constantFrom(...ATTRS).map((a) => (/^[0-9]/.test(a) ? `.${a}` : `.${a}`)),
    fc.constantFrom("[0]", "[1]", "[5]", '["a"]', '["b"]', "[-1]", "[0.5]", '["0"]', "[true]", "[null]"),
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(".0", ".1") },
      { weight: 1, arbitrary: fc.constantFrom(".0.1", ".1.0") },
    ),
    sub.map((e) => `[${e}]`),
  );
  return fc
    .tuple(
      fc.oneof(
        fc.constantFrom(...VAR_NAMES),
        sub.map((e) => `(${e})`),
      ),
      fc.array(step, { minLength: 1, maxLength: 3 }),
    )
    .map(([r, s]) => r + s.join(""));
}

function splat(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const after = fc.constantFrom(
    "",
    ".name",
    ".v",
    ".tags",
    ".0",
    "[0]",
    ".tags[0]",
    ".*",
    "[*]",
    ".*.name",
    "[*].name",
    ".a",
    "[1].name",
  );
  return fc
    .tuple(
      fc.oneof(
        fc.constantFrom("objs", "list", "nested", "obj", "nul", "s", "empty"),
        sub.map((e) => `(${e})`),
      ),
      fc.constantFrom(".*", "[*]"),
      after,
    )
    .map(([s, op, a]) => s + op + a);
}

function call(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.oneof(
        { weight: 30, arbitrary: fc.constantFrom("upper", "join", "sum", "env", "nosuch") },
        { weight: 1, arbitrary: fc.constantFrom("ns::twice", "ns::nosuch") },
      ),
      fc.array(sub, { maxLength: 3 }),
      fc.boolean(),
      maybeNl,
      fc.boolean(),
    )
    .map(([f, args, expand, brk, trailingComma]) => {
      const list = args.join(`,${brk === "" ? " " : brk}`);
      const tail = args.length > 0 && expand ? "..." : args.length > 0 && trailingComma ? "," : "";
      return `${f}(${brk}${list}${tail}${brk})`;
    });
}

function tuple(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(fc.array(sub, { maxLength: 4 }), maybeNl, fc.boolean())
    .map(
      ([items, brk, trailing]) =>
        `[${brk}${items.join(`,${brk === "" ? " " : brk}`)}${trailing && items.length > 0 ? "," : ""}${brk}]`,
    );
}

function object(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const key = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...IDENTS) },
    { weight: 2, arbitrary: fc.constantFrom('"k"', '"with space"', '"a.b"', '""', '"é"', '"e\u0301"') },
    {
      weight: 1,
      arbitrary: fc.constantFrom("1", "2.5", "(s)", "(n)", "(nul)", "(list)", '"${s}"', "s", "(t)"),
    },
  );
  const item = fc
    .tuple(key, fc.constantFrom(" = ", "=", ": ", " : "), sub)
    .map(([k, sep, v]) => `${k}${sep}${v}`);
  return fc
    .tuple(
      fc.array(item, { maxLength: 4 }),
      fc.constantFrom(", ", ",", "\n", ",\n", " \n  "),
      fc.boolean(),
      fc.boolean(),
    )
    .map(([items, sep, open, trailing]) => {
      const multi = open || sep.includes("\n");
      const body = items.join(sep) + (trailing && items.length > 0 ? (sep.includes("\n") ? "\n" : ",") : "");
      return multi ? `{\n  ${body}\n}` : `{${body === "" ? "" : ` ${body} `}}`;
    });
}

function forExpr(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const coll = fc.oneof(
    fc.constantFrom("list", "strs", "obj", "objs", "none", "empty", "nested", "s", "nul", "foo"),
    sub,
  );
  return fc
    .tuple(
      fc.boolean(),
      fc.boolean(),
      coll,
      sub,
      sub,
      fc.option(sub),
      fc.boolean(),
      fc.constantFrom("", "\n", "\n  ", " "),
      fc.constantFrom("", "\n"),
    )
    .map(([isObject, two, c, k, v, cond, group, brk, brk2]) => {
      const vars = two ? "k, v" : "v";
      const ifPart = cond === null ? "" : `${brk2} if ${cond}`;
      if (!isObject) return `[${brk}for ${vars} in ${c} :${brk2} ${v}${ifPart}${brk}]`;
      const keyExpr = two
        ? fc.sample(fc.constantFrom("k", "v", k, `"\${k}"`), {
            seed: k.length * 31 + v.length,
            numRuns: 1,
          })[0]!
        : k;
      return `{${brk}for ${vars} in ${c} :${brk2} ${keyExpr} => ${v}${group ? "..." : ""}${ifPart}${brk}}`;
    });
}

function binary(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(
      sub,
      fc.constantFrom("+", "-", "*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "&&", "||"),
      sub,
      ws,
    )
    .map(([l, op, r, w]) => `${l}${w || " "}${op}${w || " "}${r}`);
}

function conditional(sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const branch = fc.oneof(
    sub,
    fc.constantFrom(
      "1",
      '"x"',
      "true",
      "null",
      "[1]",
      '["a", "b"]',
      "[]",
      "{a = 1}",
      '{a = "x"}',
      "{b = 2}",
      "{}",
      "list",
      "obj",
      "strs",
      "n",
      "s",
    ),
  );
  const rareNl = fc.oneof({ weight: 9, arbitrary: fc.constant("") }, { weight: 1, arbitrary: nl });
  return fc
    .tuple(fc.oneof(fc.constantFrom("t", "f", "n > 2", "nul", "s", "bs"), sub), branch, branch, rareNl)
    .map(([c, a, b, brk]) => `${c} ?${brk} ${a} :${brk} ${b}`);
}

const attrName = fc.constantFrom("a", "b", "c", "d", "value", "x-y", "é", "_1", "name", "count", "k2", "on");

function bodyArb(depth: number): fc.Arbitrary<string> {
  const attr = fc
    .tuple(attrName, ws, exprArb(3), inlineComment)
    .map(([n, w, e, c]) => `${n}${w} =${w || " "}${e}${c}`);
  const label = fc.oneof(
    {
      weight: 40,
      arbitrary: fc.constantFrom(
        '"x"',
        "y",
        '"café"',
        '"cafe\u0301"',
        '"with space"',
        '""',
        '"a\\nb"',
        '"\\u00e9"',
        "z-1",
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom('"${x}"', '"%{ if t }x%{ endif }"') },
  );
  const oneLine = fc
    .tuple(
      fc.constantFrom("blk", "one"),
      fc.array(label, { maxLength: 2 }),
      fc.option(fc.tuple(attrName, exprArb(2))),
    )
    .map(([t, ls, a]) => `${[t, ...ls].join(" ")} {${a === null ? "" : ` ${a[0]} = ${a[1]} `}}`);
  const items: fc.Arbitrary<string>[] = [attr, attr, oneLine];
  if (depth > 0) {
    items.push(
      fc
        .tuple(fc.constantFrom("block", "nested"), fc.array(label, { maxLength: 2 }), bodyArb(depth - 1))
        .map(([t, ls, b]) => `${[t, ...ls].join(" ")} {\n${b.replace(/^(?=.)/gm, "  ")}}`),
    );
  }
  return fc
    .array(fc.oneof(...items), { minLength: 1, maxLength: 4 })
    .map(distinctAttributes)
    .chain((lines) =>
      fc
        .array(nl, { minLength: lines.length, maxLength: lines.length })
        .map((seps) => lines.map((l, i) => l + seps[i]).join("")),
    );
}

/** Mostly drops a repeated attribute name in one body (one in five is kept, to test the error). */
function distinctAttributes(lines: string[]): string[] {
  const seen = new Set<string>();
  return lines.filter((l, i) => {
    const m = /^([^\s=]+)\s*=/.exec(l);
    if (m === null) return true;
    if (!seen.has(m[1]!)) {
      seen.add(m[1]!);
      return true;
    }
    return i % 5 === 0;
  });
}

interface Edit {
  at: number;
  kind: "insert" | "delete";
  text: string;
  length: number;
}

const editArb: fc.Arbitrary<Edit> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom("insert", "delete"),
  text: fc.constantFrom(
    ...'{}[]()"=:,.?!<>+-*/%&|~$#\\\n ',
    "${",
    "%{",
    "<<EOT\n",
    "EOT",
    "for ",
    "=>",
    "...",
    "/*",
    "'",
    "\u00a0",
    "\u0000",
  ),
  length: fc.integer({ min: 1, max: 6 }),
});

function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  for (const e of edits) {
    const at = e.at % (out.length + 1);
    out =
      e.kind === "insert"
        ? out.slice(0, at) + e.text + out.slice(at)
        : out.slice(0, at) + out.slice(at + e.length);
  }
  return out;
}

const fileArb = fc
  .tuple(
    bodyArb(2),
    fc.constantFrom("", "\n"),
    fc.integer({ min: 0, max: 99 }),
    fc.array(editArb, { minLength: 1, maxLength: 2 }),
  )
  .map(([body, end, roll, edits]) => {
    const text = body.endsWith("\n") && end === "" && roll % 7 === 0 ? body.slice(0, -1) : body;
    // One input in three gets random edits.
    return roll < 33 ? applyEdits(text, edits) : text;
  });

/** `count` generated files for `seed`, always the same for the same arguments. */
export function generateInputs(seed: number, count: number): string[] {
  return fc.sample(fileArb, { seed, numRuns: count });
}
