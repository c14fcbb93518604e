// The secrets rule: a sensitive value is written exactly `env("NAME")`. The shape
// is checked on the unevaluated syntax (a string value cannot tell where it came
// from); resolution is a separate step that fails when the variable is unset.
// Nothing in this module logs, and no message it builds contains a value.

import { type Expression, literalString } from "@pluggableharness/hcl";
import { type ConfigDiagnostic, errorAt } from "./diagnostics.ts";
import { SecretMask } from "./secret-mask.ts";

export type Environment = Readonly<Record<string, string | undefined>>;

const DOLLAR = "$";
const FORM = 'Write it as exactly env("NAME") and set NAME in the environment.';

/**
 * The variable name of an `env("NAME")` expression, or a positioned
 * `secret_literal` diagnostic explaining what is wrong with the shape.
 */
export function envShape(
  expr: Expression,
  what: string,
): { name: string } | { diagnostic: ConfigDiagnostic } {
  const reject = (why: string, hint: string) => ({
    diagnostic: errorAt(
      "secret_literal",
      `${what} must be exactly env("NAME")`,
      `${why} ${hint}`,
      expr.range,
    ),
  });
  switch (expr.kind) {
    case "FunctionCall": {
      if (expr.name !== "env") {
        return reject(`It calls ${expr.name}() instead of env().`, FORM);
      }
      if (expr.args.length !== 1 || expr.expandFinal) {
        return reject(
          `env() here takes exactly one argument; ${expr.args.length} ${expr.args.length === 1 ? "was" : "were"} given.`,
          "Fallback values are not allowed for secrets: an unset variable must fail loudly.",
        );
      }
      const arg = expr.args[0]!;
      const name = literalString(arg);
      if (name === undefined) {
        return reject(
          "The argument of env() must be a quoted literal variable name, not an expression.",
          FORM,
        );
      }
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        return {
          diagnostic: errorAt(
            "secret_literal",
            "Invalid environment variable name",
            `"${name}" is not a valid environment variable name (letters, digits and "_", not starting with a digit).`,
            arg.range,
          ),
        };
      }
      return { name };
    }
    case "Template":
      if (literalString(expr) !== undefined) {
        return reject("A literal secret value is not allowed in configuration.", FORM);
      }
      return reject("String templates and interpolation are not allowed for secrets.", FORM);
    case "TemplateWrap":
      return reject(
        `"${DOLLAR}{env(...)}" wraps the call in a string template.`,
        `Remove the quotes and "${DOLLAR}{ }".`,
      );
    case "Parens":
      return reject("The call is wrapped in parentheses.", "Remove the parentheses.");
    case "Variable":
    case "GetAttr":
    case "Index":
      return reject("A reference is not allowed for secrets.", FORM);
    default:
      return reject("Only a direct env() call is allowed for secrets.", FORM);
  }
}

/** Resolves a variable; the diagnostic (when unset) names the variable only. */
export function resolveEnv(
  name: string,
  env: Environment,
  expr: Expression,
): { value: string } | { diagnostic: ConfigDiagnostic } {
  const value = Object.hasOwn(env, name) ? env[name] : undefined;
  if (value === undefined) {
    const at = expr.kind === "FunctionCall" ? (expr.args[0]?.range ?? expr.range) : expr.range;
    return {
      diagnostic: errorAt(
        "env_unset",
        "Environment variable not set",
        `The environment variable "${name}" is not set; it must be set before the agent starts.`,
        at,
      ),
    };
  }
  return { value };
}

const REDACTED = "(sensitive)";

/**
 * A resolved secret. It serialises, prints and inspects as "(sensitive)"; only
 * `reveal()` returns the value.
 */
export class Secret {
  readonly #value: string;
  /** The variable it came from, for messages. */
  readonly envName: string;

  constructor(value: string, envName: string) {
    this.#value = value;
    this.envName = envName;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return REDACTED;
  }

  toString(): string {
    return REDACTED;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return `Secret(${this.envName})`;
  }
}

/**
 * Safety net for diagnostics produced while values from the environment were in
 * play: any occurrence of such a value (4+ characters, and its encodings from 8) is
 * replaced. Our own messages never include values; this guards text coming from elsewhere.
 */
export function scrub(diagnostics: ConfigDiagnostic[], values: Iterable<string>): ConfigDiagnostic[] {
  const mask = new SecretMask(values, { minLiteral: 4, marker: REDACTED });
  if (mask.empty) return diagnostics;
  return diagnostics.map((d) => ({ ...d, summary: mask.mask(d.summary), detail: mask.mask(d.detail) }));
}

/**
 * The environment variables a provider block's credentials come from: attributes named
 * like a key or token written `env("NAME")`. An auth failure names them, so the operator
 * knows which variable holds the key the vendor rejected (never the value).
 */
export function credentialVariables(
  block: { readonly body: { readonly items: readonly unknown[] } } | undefined,
): string[] {
  const names: string[] = [];
  for (const raw of block?.body.items ?? []) {
    const item = raw as { kind?: string; name?: string; expr?: Expression };
    if (item.kind !== "Attribute" || !item.name || !item.expr) continue;
    if (!/key|token|secret|credential/i.test(item.name)) continue;
    const shape = envShape(item.expr, item.name);
    if ("name" in shape) names.push(shape.name);
  }
  return names;
}
