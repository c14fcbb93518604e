// The part of lowlight's API the TUI uses. lowlight's own declarations pull in
// highlight.js's, which reference the DOM lib and would leak DOM globals (and their
// conflicting ReadableStream) into every package of the project's one tsconfig.
import type { Root } from "hast";

export interface Lowlight {
  highlight(language: string, value: string): Root;
  registered(language: string): boolean;
}

export const common: Readonly<Record<string, unknown>>;
export function createLowlight(grammars?: Readonly<Record<string, unknown>>): Lowlight;
