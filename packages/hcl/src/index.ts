// Public API of @pluggableharness/hcl. See README.md.

export type * from "./ast.ts";
export {
  type Diagnostic,
  formatDiagnostic,
  formatDiagnostics,
  hasErrors,
  type Severity,
} from "./diagnostics.ts";
export { type EvalContext, type EvalResult, evaluate } from "./eval.ts";
export { type CallInfo, envFunction, FunctionError, type HclFunction } from "./functions.ts";
export { type ExpressionParseResult, type ParseResult, parseExpression, parseFile } from "./parser.ts";
export {
  type AttributeSchema,
  attributes,
  type BlockSchema,
  type BodyContent,
  type BodySchema,
  blocks,
  bodyContent,
  getAttribute,
  literalString,
} from "./query.ts";
export type { Pos, Range } from "./source.ts";
export { formatNumber, isObject, type Value, type ValueObject, valuesEqual } from "./value.ts";
export { type WriteOptions, type WriterBlock, type WriterDocument, writeHcl, writeValue } from "./writer.ts";
