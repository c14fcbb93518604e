// The syntax tree. Every node carries the source range it was parsed from.
// Nodes are plain, JSON-serialisable objects discriminated by `kind`.

import type { Range } from "./source.ts";

interface NodeBase {
  range: Range;
}

// ---- structure ---------------------------------------------------------------

export interface File extends NodeBase {
  kind: "File";
  filename: string;
  body: Body;
}

/** The contents of a file or of a block, in source order. */
export interface Body extends NodeBase {
  kind: "Body";
  items: BodyItem[];
}

export type BodyItem = Attribute | Block;

/** `name = expr` */
export interface Attribute extends NodeBase {
  kind: "Attribute";
  name: string;
  nameRange: Range;
  expr: Expression;
}

/** `type "label" label { body }` */
export interface Block extends NodeBase {
  kind: "Block";
  type: string;
  typeRange: Range;
  labels: BlockLabel[];
  body: Body;
  openBraceRange: Range;
  closeBraceRange: Range;
}

export interface BlockLabel {
  value: string;
  range: Range;
  /** Written as a quoted string rather than a bare identifier. */
  quoted: boolean;
}

// ---- expressions ---------------------------------------------------------------

export type Expression =
  | NumberLiteral
  | BoolLiteral
  | NullLiteral
  | Template
  | TemplateWrap
  | Variable
  | GetAttr
  | Index
  | Splat
  | SplatItem
  | FunctionCall
  | Tuple
  | ObjectCons
  | Parens
  | Unary
  | Binary
  | Conditional
  | For;

/** A number. `raw` is the source text; `value` is its nearest IEEE double. */
export interface NumberLiteral extends NodeBase {
  kind: "Number";
  raw: string;
  value: number;
}

export interface BoolLiteral extends NodeBase {
  kind: "Bool";
  value: boolean;
}

export interface NullLiteral extends NodeBase {
  kind: "Null";
}

/**
 * A quoted string (`heredoc` absent) or a heredoc. Literal parts hold decoded,
 * NFC-normalised text with strip markers and `<<-` indentation already applied.
 * `"plain"` is a template with one literal part; `""` has no parts.
 */
export interface Template extends NodeBase {
  kind: "Template";
  parts: TemplatePart[];
  heredoc?: { marker: string; indented: boolean };
}

/**
 * A quoted string that is exactly one interpolation, `"${expr}"`. It evaluates
 * to `expr`'s value unconverted; kept as its own node so callers can tell it
 * apart from a bare `expr`.
 */
export interface TemplateWrap extends NodeBase {
  kind: "TemplateWrap";
  expr: Expression;
}

export type TemplatePart = TemplateLiteral | TemplateInterpolation | TemplateIf | TemplateFor;

export interface TemplateLiteral extends NodeBase {
  kind: "TemplateLiteral";
  value: string;
}

/** `${expr}` inside a template. */
export interface TemplateInterpolation extends NodeBase {
  kind: "TemplateInterpolation";
  expr: Expression;
  stripLeft: boolean;
  stripRight: boolean;
}

/** `%{ if cond }then%{ else }else%{ endif }` */
export interface TemplateIf extends NodeBase {
  kind: "TemplateIf";
  condition: Expression;
  then: TemplatePart[];
  else?: TemplatePart[];
}

/** `%{ for k, v in coll }body%{ endfor }` */
export interface TemplateFor extends NodeBase {
  kind: "TemplateFor";
  keyVar?: string;
  valueVar: string;
  collection: Expression;
  body: TemplatePart[];
  /** The opening `%{ for ... }` directive. */
  openRange: Range;
}

/** A bare name, looked up in the evaluation scope. */
export interface Variable extends NodeBase {
  kind: "Variable";
  name: string;
}

/** `object.name` */
export interface GetAttr extends NodeBase {
  kind: "GetAttr";
  object: Expression;
  name: string;
  nameRange: Range;
  /** The dot and the name: where HCL reports a failed lookup. */
  stepRange: Range;
}

/** `collection[key]`, or the legacy `collection.0` form (`legacy: true`). */
export interface Index extends NodeBase {
  kind: "Index";
  collection: Expression;
  key: Expression;
  legacy: boolean;
  /** `[key]` with its brackets, or `.0` for the legacy form: where HCL reports a failed lookup. */
  stepRange: Range;
}

/**
 * `source.*.attr` (`full: false`) or `source[*].attr[0]` (`full: true`).
 * `each` is evaluated once per element with the element bound to the
 * `SplatItem` node it contains.
 */
export interface Splat extends NodeBase {
  kind: "Splat";
  source: Expression;
  each: Expression;
  full: boolean;
  /** `.*` or `[*]`. */
  markerRange: Range;
}

/** The current element inside a splat's `each` expression; its range is the splat marker. */
export interface SplatItem extends NodeBase {
  kind: "SplatItem";
}

/** `name(args)`; `name` may be namespaced (`ns::name`). */
export interface FunctionCall extends NodeBase {
  kind: "FunctionCall";
  name: string;
  nameRange: Range;
  args: Expression[];
  /** The last argument was written `arg...` and expands into several arguments. */
  expandFinal: boolean;
  openParenRange: Range;
  closeParenRange: Range;
}

/** `[a, b]` */
export interface Tuple extends NodeBase {
  kind: "Tuple";
  items: Expression[];
}

/**
 * `{ key = value }`. A key that is a bare `Variable` (not parenthesised)
 * stands for its own name; any other key expression is evaluated.
 */
export interface ObjectCons extends NodeBase {
  kind: "Object";
  items: ObjectItem[];
}

export interface ObjectItem extends NodeBase {
  kind: "ObjectItem";
  key: Expression;
  value: Expression;
}

/** `(expr)` */
export interface Parens extends NodeBase {
  kind: "Parens";
  expr: Expression;
}

export type UnaryOp = "-" | "!";

export interface Unary extends NodeBase {
  kind: "Unary";
  op: UnaryOp;
  operand: Expression;
}

export type BinaryOp = "||" | "&&" | "==" | "!=" | "<" | ">" | "<=" | ">=" | "+" | "-" | "*" | "/" | "%";

export interface Binary extends NodeBase {
  kind: "Binary";
  op: BinaryOp;
  left: Expression;
  right: Expression;
}

/** `condition ? trueExpr : falseExpr` */
export interface Conditional extends NodeBase {
  kind: "Conditional";
  condition: Expression;
  trueExpr: Expression;
  falseExpr: Expression;
}

/**
 * `[for k, v in coll : value if cond]` (`object: false`) or
 * `{for k, v in coll : key => value... if cond}` (`object: true`).
 */
export interface For extends NodeBase {
  kind: "For";
  object: boolean;
  keyVar?: string;
  valueVar: string;
  collection: Expression;
  keyExpr?: Expression;
  valueExpr: Expression;
  condition?: Expression;
  /** `...` after the value: collect values sharing a key into a list. */
  grouping: boolean;
}
