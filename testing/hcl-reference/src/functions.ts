// The function table both implementations evaluate with: the twin of
// `functions()` in go/hclref.go. Each function checks its own arguments, so a
// failure is reported at the same argument (or at the call) on both sides.

import { envFunction, FunctionError, type HclFunction, type Value } from "@pluggableharness/hcl";

const asciiUpper = (s: string): string => s.replace(/[a-z]+/g, (m) => m.toUpperCase());

export function referenceFunctions(env: Record<string, string>): Record<string, HclFunction> {
  const callError = (detail: string) => new FunctionError({ summary: "Error in function call", detail });
  const argError = (argIndex: number, detail: string) =>
    new FunctionError({ code: "invalid-argument", summary: "Invalid function argument", detail, argIndex });
  const envFn = envFunction(env);
  return {
    upper: (args) => {
      if (args.length !== 1) throw callError("upper takes one argument");
      const s = args[0];
      if (typeof s !== "string") throw argError(0, "upper needs a string");
      return asciiUpper(s);
    },
    join: (args) => {
      if (args.length !== 2) throw callError("join takes two arguments");
      const [sep, list] = args;
      if (typeof sep !== "string") throw argError(0, "the separator must be a string");
      if (!Array.isArray(list) || !list.every((x) => typeof x === "string")) {
        throw argError(1, "join needs a list of strings");
      }
      return list.join(sep);
    },
    sum: (args) =>
      args.reduce<number>((total, v: Value, i) => {
        if (typeof v !== "number") throw argError(i, "sum adds numbers");
        return total + v;
      }, 0),
    "ns::twice": (args) => {
      if (args.length !== 1 || typeof args[0] !== "number") throw callError("twice takes one number");
      return args[0] * 2;
    },
    env: (args, call) => {
      if (args.length !== 1) throw callError("env takes one argument");
      if (typeof args[0] !== "string") throw argError(0, "env needs a variable name");
      return envFn(args, call);
    },
  };
}
