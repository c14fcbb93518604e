// The function-table contract and the optional `env(name)` built-in.

import type { Expression } from "./ast.ts";
import { literalString } from "./query.ts";
import type { Range } from "./source.ts";
import type { Value } from "./value.ts";

/** What a function learns about the call it is serving. */
export interface CallInfo {
  name: string;
  /** The whole call expression. */
  range: Range;
  /** One range per argument after `...` expansion (an expanded tail shares its range). */
  argRanges: Range[];
  /** The unevaluated argument expressions, aligned with `argRanges` the same way. */
  argExpressions: Expression[];
}

/**
 * A function callable from expressions. It returns a value, or throws a
 * `FunctionError` which the evaluator turns into a positioned diagnostic.
 */
export type HclFunction = (args: readonly Value[], call: CallInfo) => Value;

/** A failure inside a function, reported at the call or at one argument. */
export class FunctionError extends Error {
  readonly summary: string;
  readonly detail: string;
  readonly code: string;
  /** Index of the argument to point at; the whole call when absent. */
  readonly argIndex: number | undefined;

  constructor(options: { code?: string; summary: string; detail: string; argIndex?: number }) {
    super(`${options.summary}: ${options.detail}`);
    this.name = "FunctionError";
    this.summary = options.summary;
    this.detail = options.detail;
    this.code = options.code ?? "function-error";
    this.argIndex = options.argIndex;
  }
}

/**
 * `env(name)`: the value of an environment variable. An unset variable is an
 * error pointing at the argument (a variable set to "" is returned as ""). No
 * value ever appears in a diagnostic: the name is quoted only when it was
 * written as a literal string, since a computed name could itself be a secret.
 */
export function envFunction(
  environment: Readonly<Record<string, string | undefined>> = process.env,
): HclFunction {
  return (args, call) => {
    if (args.length !== 1) {
      throw new FunctionError({
        code: "wrong-argument-count",
        summary: "Wrong number of arguments",
        detail: `env takes exactly one argument, the variable name; ${args.length} were given.`,
      });
    }
    const name = args[0];
    if (typeof name !== "string") {
      throw new FunctionError({
        code: "invalid-argument",
        summary: "Invalid function argument",
        detail: "env expects the name of an environment variable as a string.",
        argIndex: 0,
      });
    }
    const value = Object.hasOwn(environment, name) ? environment[name] : undefined;
    if (value === undefined) {
      throw new FunctionError({
        code: "env-unset",
        summary: "Environment variable not set",
        detail:
          literalString(call.argExpressions[0]!) === name
            ? `The environment variable "${name}" is not set.`
            : "The environment variable named by this argument is not set.",
        argIndex: 0,
      });
    }
    return value;
  };
}
