// The evaluator's typed values: the part of HCL's type system (go-cty) that
// expressions can reach. Plain `Value`s carry no types, but HCL's results
// depend on them: a conditional unifies the types of its two results
// (`t ? 5 : "x"` is "5"), `==` is false between values of different types, and
// a typed null or an empty list keeps its element type. The evaluator works on
// `TypedValue`s and hands plain values back to callers.
//
// Unknown values exist only inside the evaluator: they stand for the result of
// a sub-expression whose diagnostics are being discarded (the branch a
// conditional did not take) and for the loop variables while a `for`
// condition is type-checked before iterating, as HCL does.

import { formatNumber, setKey, type Value, type ValueObject } from "./value.ts";

export type Type =
  | { readonly kind: "string" }
  | { readonly kind: "number" }
  | { readonly kind: "bool" }
  | { readonly kind: "dynamic" }
  | { readonly kind: "tuple"; readonly elems: readonly Type[] }
  | { readonly kind: "object"; readonly attrs: ReadonlyMap<string, Type> }
  | { readonly kind: "list"; readonly elem: Type }
  | { readonly kind: "map"; readonly elem: Type };

export const STRING: Type = { kind: "string" };
export const NUMBER: Type = { kind: "number" };
export const BOOL: Type = { kind: "bool" };
export const DYNAMIC: Type = { kind: "dynamic" };

export const tupleType = (elems: readonly Type[]): Type => ({ kind: "tuple", elems });
export const objectType = (attrs: ReadonlyMap<string, Type>): Type => ({ kind: "object", attrs });
export const listType = (elem: Type): Type => ({ kind: "list", elem });
export const mapType = (elem: Type): Type => ({ kind: "map", elem });

/** A value with its type. Collections hold typed elements so nested types survive. */
export type TypedValue =
  | { readonly kind: "unknown"; readonly type: Type }
  | { readonly kind: "null"; readonly type: Type }
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "number"; readonly value: number }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "tuple"; readonly items: readonly TypedValue[] }
  | { readonly kind: "list"; readonly elem: Type; readonly items: readonly TypedValue[] }
  | { readonly kind: "object"; readonly attrs: ReadonlyMap<string, TypedValue> }
  | { readonly kind: "map"; readonly elem: Type; readonly entries: ReadonlyMap<string, TypedValue> };

export const unknown = (type: Type = DYNAMIC): TypedValue => ({ kind: "unknown", type });
export const nullOf = (type: Type = DYNAMIC): TypedValue => ({ kind: "null", type });
export const str = (value: string): TypedValue => ({ kind: "string", value });
export const num = (value: number): TypedValue => ({ kind: "number", value });
export const bool = (value: boolean): TypedValue => ({ kind: "bool", value });
export const tuple = (items: readonly TypedValue[]): TypedValue => ({ kind: "tuple", items });
export const object = (attrs: ReadonlyMap<string, TypedValue>): TypedValue => ({ kind: "object", attrs });

export const DYNAMIC_VALUE: TypedValue = unknown(DYNAMIC);

export function typeOf(v: TypedValue): Type {
  switch (v.kind) {
    case "unknown":
    case "null":
      return v.type;
    case "string":
      return STRING;
    case "number":
      return NUMBER;
    case "bool":
      return BOOL;
    case "tuple":
      return tupleType(v.items.map(typeOf));
    case "list":
      return listType(v.elem);
    case "object":
      return objectType(new Map([...v.attrs].map(([k, a]) => [k, typeOf(a)])));
    case "map":
      return mapType(v.elem);
  }
}

export const isKnown = (v: TypedValue): boolean => v.kind !== "unknown";
export const isNull = (v: TypedValue): boolean => v.kind === "null";
export const isPrimitive = (t: Type): boolean =>
  t.kind === "string" || t.kind === "number" || t.kind === "bool";

/** Deep: true when every element is known (a value is "wholly known"). */
export function isWhollyKnown(v: TypedValue): boolean {
  switch (v.kind) {
    case "unknown":
      return false;
    case "tuple":
    case "list":
      return v.items.every(isWhollyKnown);
    case "object":
      return [...v.attrs.values()].every(isWhollyKnown);
    case "map":
      return [...v.entries.values()].every(isWhollyKnown);
    default:
      return true;
  }
}

export function typesEqual(a: Type, b: Type): boolean {
  if (a === b) return true;
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case "tuple": {
      const be = (b as typeof a).elems;
      return a.elems.length === be.length && a.elems.every((t, i) => typesEqual(t, be[i]!));
    }
    case "object": {
      const ba = (b as typeof a).attrs;
      if (a.attrs.size !== ba.size) return false;
      for (const [k, t] of a.attrs) {
        const o = ba.get(k);
        if (o === undefined || !typesEqual(t, o)) return false;
      }
      return true;
    }
    case "list":
    case "map":
      return typesEqual(a.elem, (b as typeof a).elem);
    default:
      return true;
  }
}

export function hasDynamic(t: Type): boolean {
  switch (t.kind) {
    case "dynamic":
      return true;
    case "tuple":
      return t.elems.some(hasDynamic);
    case "object":
      return [...t.attrs.values()].some(hasDynamic);
    case "list":
    case "map":
      return hasDynamic(t.elem);
    default:
      return false;
  }
}

/** HCL's name for a type, for messages: "string", "tuple", "list of number"... */
export function friendlyName(t: Type): string {
  switch (t.kind) {
    case "dynamic":
      return "dynamic";
    case "list":
      return `list of ${friendlyName(t.elem)}`;
    case "map":
      return `map of ${friendlyName(t.elem)}`;
    default:
      return t.kind;
  }
}

// ---- plain values ------------------------------------------------------------------

/** The typed form of a plain value: arrays are tuples, objects are objects, null is of unknown type. */
export function fromPlain(v: Value): TypedValue {
  if (v === null) return nullOf(DYNAMIC);
  if (typeof v === "string") return str(v);
  if (typeof v === "number") return num(v);
  if (typeof v === "boolean") return bool(v);
  if (Array.isArray(v)) return tuple(v.map(fromPlain));
  return object(new Map(Object.keys(v).map((k) => [k, fromPlain(v[k]!)])));
}

/** The plain value; `undefined` if any part is unknown. */
export function toPlain(v: TypedValue): Value | undefined {
  switch (v.kind) {
    case "unknown":
      return undefined;
    case "null":
      return null;
    case "string":
    case "number":
    case "bool":
      return v.value;
    case "tuple":
    case "list": {
      const out: Value[] = [];
      for (const item of v.items) {
        const p = toPlain(item);
        if (p === undefined) return undefined;
        out.push(p);
      }
      return out;
    }
    case "object":
    case "map": {
      const out: ValueObject = {};
      for (const [k, item] of v.kind === "object" ? v.attrs : v.entries) {
        const p = toPlain(item);
        if (p === undefined) return undefined;
        setKey(out, k, p);
      }
      return out;
    }
  }
}

// ---- keys and iteration ---------------------------------------------------------------

/** Orders strings by code point, as Go compares them (UTF-16 order differs above U+FFFF). */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

export const sortedKeys = (m: ReadonlyMap<string, unknown>): string[] => [...m.keys()].sort(compareKeys);

/** The (key, value) pairs a `for` or a splat visits: index order, or sorted keys. */
export function elements(v: TypedValue): Array<[TypedValue, TypedValue]> {
  switch (v.kind) {
    case "tuple":
    case "list":
      return v.items.map((item, i) => [num(i), item]);
    case "object":
      return sortedKeys(v.attrs).map((k) => [str(k), v.attrs.get(k)!]);
    case "map":
      return sortedKeys(v.entries).map((k) => [str(k), v.entries.get(k)!]);
    default:
      return [];
  }
}

export function canIterate(t: Type): boolean {
  return t.kind === "tuple" || t.kind === "list" || t.kind === "object" || t.kind === "map";
}

// ---- equality ---------------------------------------------------------------------------

/** HCL's `==`: null equals null whatever the types; otherwise types must match. `undefined` is unknown. */
export function equals(a: TypedValue, b: TypedValue): boolean | undefined {
  if (!isKnown(a) && !isKnown(b)) return undefined;
  if (!isKnown(a) || !isKnown(b)) {
    const [k, u] = isKnown(a) ? [a, b] : [b, a];
    if (isNull(k) || hasDynamic(typeOf(u))) return undefined;
    return typesEqual(typeOf(k), typeOf(u)) ? undefined : false;
  }
  if (isNull(a) && isNull(b)) return true;
  if (isNull(a) || isNull(b)) return false;
  if (!isWhollyKnown(a) || !isWhollyKnown(b)) return typesEqual(typeOf(a), typeOf(b)) ? undefined : false;
  if (!typesEqual(typeOf(a), typeOf(b))) return false;
  switch (a.kind) {
    case "string":
    case "bool":
      return a.value === (b as typeof a).value;
    case "number":
      return a.value === (b as typeof a).value;
    case "tuple":
    case "list": {
      const bi = (b as typeof a).items;
      if (a.items.length !== bi.length) return false;
      for (let i = 0; i < a.items.length; i++) {
        const eq = equals(a.items[i]!, bi[i]!);
        if (eq !== true) return eq;
      }
      return true;
    }
    case "object":
    case "map": {
      const am = a.kind === "object" ? a.attrs : a.entries;
      const bm =
        (b as typeof a).kind === "object"
          ? (b as typeof a & { kind: "object" }).attrs
          : (b as typeof a & { kind: "map" }).entries;
      if (am.size !== bm.size) return false;
      for (const [k, x] of am) {
        const y = bm.get(k);
        if (y === undefined) return false;
        const eq = equals(x, y);
        if (eq !== true) return eq;
      }
      return true;
    }
    default:
      return false;
  }
}

// ---- conversion -----------------------------------------------------------------------

/** Why a conversion failed, in HCL's words ("a number is required"). */
export class ConversionError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

type Conversion = (v: TypedValue) => TypedValue;

const NUMERIC_STRING = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/** How HCL parses a string as a number (decimal, optional sign and exponent). */
export function parseNumber(s: string): number | undefined {
  return NUMERIC_STRING.test(s) ? Number(s) : undefined;
}

function primitiveConversion(from: Type, to: Type): Conversion | undefined {
  if (to.kind === "string") {
    if (from.kind === "number") return (v) => str(formatNumber((v as { value: number }).value));
    if (from.kind === "bool") return (v) => str((v as { value: boolean }).value ? "true" : "false");
  }
  if (from.kind === "string" && to.kind === "number") {
    return (v) => {
      const n = parseNumber((v as { value: string }).value);
      if (n === undefined) throw new ConversionError("a number is required");
      return num(n);
    };
  }
  if (from.kind === "string" && to.kind === "bool") {
    return (v) => {
      const s = (v as { value: string }).value;
      if (s === "true" || s === "1") return bool(true);
      if (s === "false" || s === "0") return bool(false);
      const lower = s.toLowerCase();
      if (lower === "true" || lower === "false") {
        throw new ConversionError(`a bool is required; to convert from string, use lowercase "${lower}"`);
      }
      throw new ConversionError("a bool is required");
    };
  }
  return undefined;
}

/** Replaces dynamic parts of `target` with the corresponding parts of `from` (for nulls and unknowns). */
function dynamicReplace(from: Type, target: Type): Type {
  if (target.kind === "dynamic") return from;
  if (target.kind === "list" && from.kind === "list") return listType(dynamicReplace(from.elem, target.elem));
  if (target.kind === "map" && from.kind === "map") return mapType(dynamicReplace(from.elem, target.elem));
  return target;
}

/**
 * The conversion from `from` to `to` that HCL would apply (unsafe conversions
 * included: a string may become a number, failing at run time), or undefined
 * when the types are incompatible.
 */
export function getConversion(from: Type, to: Type): Conversion | undefined {
  const known = knownConversion(from, to);
  if (known === undefined) return undefined;
  return (v) => {
    if (to.kind === "dynamic") return v;
    if (v.kind === "unknown") return unknown(dynamicReplace(v.type, to));
    if (v.kind === "null") return nullOf(dynamicReplace(v.type, to));
    return known(v);
  };
}

function knownConversion(from: Type, to: Type): Conversion | undefined {
  if (typesEqual(from, to)) return (v) => v;
  if (to.kind === "dynamic") return (v) => v;
  if (from.kind === "dynamic") {
    // Only nulls and unknowns are of dynamic type; a real value brings its own.
    return (v) => {
      const conv = getConversion(typeOf(v), to);
      if (conv === undefined) throw new ConversionError(mismatch(typeOf(v), to));
      return conv(v);
    };
  }
  if (isPrimitive(from) && isPrimitive(to)) return primitiveConversion(from, to);
  if (from.kind === "object" && to.kind === "object") return objectToObject(from, to);
  if (from.kind === "tuple" && to.kind === "tuple") return tupleToTuple(from, to);
  if (to.kind === "list" && from.kind === "list") return collectionToList(from.elem, to.elem);
  if (to.kind === "map" && from.kind === "map") {
    const conv = getConversion(from.elem, to.elem);
    if (conv === undefined) return undefined;
    return (v) => {
      const m = v as TypedValue & { kind: "map" };
      const entries = new Map([...m.entries].map(([k, x]) => [k, conv(x)]));
      return {
        kind: "map",
        elem: entries.size === 0 ? to.elem : commonType([...entries.values()], to.elem),
        entries,
      };
    };
  }
  if (to.kind === "list" && from.kind === "tuple") return tupleToList(from, to.elem);
  if (to.kind === "map" && from.kind === "object") return objectToMap(from, to.elem);
  if (to.kind === "object" && from.kind === "map") return mapToObject(from, to);
  if (to.kind === "tuple" && from.kind === "list") return undefined;
  return undefined;
}

function commonType(items: readonly TypedValue[], fallback: Type): Type {
  const first = items[0];
  return first === undefined ? fallback : typeOf(first);
}

function objectToObject(
  from: Type & { kind: "object" },
  to: Type & { kind: "object" },
): Conversion | undefined {
  const convs = new Map<string, Conversion>();
  for (const [name, toAty] of to.attrs) {
    const fromAty = from.attrs.get(name);
    if (fromAty === undefined) return undefined;
    const c = getConversion(fromAty, toAty);
    if (c === undefined) return undefined;
    convs.set(name, c);
  }
  return (v) => {
    const attrs = (v as TypedValue & { kind: "object" }).attrs;
    return object(new Map([...convs].map(([name, c]) => [name, c(attrs.get(name)!)])));
  };
}

function tupleToTuple(from: Type & { kind: "tuple" }, to: Type & { kind: "tuple" }): Conversion | undefined {
  if (from.elems.length !== to.elems.length) return undefined;
  const convs: Conversion[] = [];
  for (let i = 0; i < from.elems.length; i++) {
    const c = getConversion(from.elems[i]!, to.elems[i]!);
    if (c === undefined) return undefined;
    convs.push(c);
  }
  return (v) => tuple((v as TypedValue & { kind: "tuple" }).items.map((x, i) => convs[i]!(x)));
}

function collectionToList(fromElem: Type, toElem: Type): Conversion | undefined {
  const conv = getConversion(fromElem, toElem);
  if (conv === undefined) return undefined;
  return (v) => {
    const items = (v as TypedValue & { kind: "list" }).items.map(conv);
    if (items.length === 0)
      return { kind: "list", elem: toElem.kind === "dynamic" ? fromElem : toElem, items };
    return makeList(items);
  };
}

function makeList(items: readonly TypedValue[]): TypedValue {
  const t = typeOf(items[0]!);
  if (!items.every((x) => typesEqual(typeOf(x), t))) {
    throw new ConversionError("element types must all match for conversion to list");
  }
  return { kind: "list", elem: t, items };
}

function tupleToList(from: Type & { kind: "tuple" }, listElem: Type): Conversion | undefined {
  if (from.elems.length === 0) return () => ({ kind: "list", elem: listElem, items: [] });
  let elem = listElem;
  if (elem.kind === "dynamic") {
    const [u] = unify(from.elems);
    if (u === undefined) return undefined;
    if (u.kind === "dynamic" && !from.elems.every((t) => t.kind === "dynamic")) return undefined;
    elem = u;
  }
  const convs: Conversion[] = [];
  for (const t of from.elems) {
    const c = getConversion(t, elem);
    if (c === undefined) return undefined;
    convs.push(c);
  }
  return (v) => {
    const items = (v as TypedValue & { kind: "tuple" }).items.map((x, i) => convs[i]!(x));
    return makeList(unifyElements(items));
  };
}

function objectToMap(from: Type & { kind: "object" }, mapElem: Type): Conversion | undefined {
  if (from.attrs.size === 0) return () => ({ kind: "map", elem: mapElem, entries: new Map() });
  let elem = mapElem;
  if (elem.kind === "dynamic") {
    const [u] = unify([...from.attrs.values()]);
    if (u === undefined) return undefined;
    elem = u;
  }
  const convs = new Map<string, Conversion>();
  for (const [name, t] of from.attrs) {
    const c = getConversion(t, elem);
    if (c === undefined) return undefined;
    convs.set(name, c);
  }
  return (v) => {
    const attrs = (v as TypedValue & { kind: "object" }).attrs;
    let entries = new Map([...attrs].map(([k, x]) => [k, convs.get(k)!(x)]));
    if (elem.kind === "list" || elem.kind === "map" || elem.kind === "object") {
      const unified = unifyElements([...entries.values()]);
      entries = new Map([...entries.keys()].map((k, i) => [k, unified[i]!]));
    }
    const values = [...entries.values()];
    const t = typeOf(values[0]!);
    if (!values.every((x) => typesEqual(typeOf(x), t))) {
      throw new ConversionError("attribute types must all match for conversion to map");
    }
    return { kind: "map", elem: t, entries };
  };
}

function mapToObject(from: Type & { kind: "map" }, to: Type & { kind: "object" }): Conversion | undefined {
  const convs = new Map<string, Conversion>();
  for (const [name, t] of to.attrs) {
    const c = getConversion(from.elem, t);
    if (c === undefined) return undefined;
    convs.set(name, c);
  }
  return (v) => {
    const entries = (v as TypedValue & { kind: "map" }).entries;
    const attrs = new Map<string, TypedValue>();
    for (const [name, c] of convs) {
      const x = entries.get(name);
      if (x === undefined) throw new ConversionError(`map has no element for required attribute "${name}"`);
      attrs.set(name, c(x));
    }
    return object(attrs);
  };
}

/** Converts every element to the elements' unified type. */
function unifyElements(items: readonly TypedValue[]): TypedValue[] {
  const [u] = unify(items.map(typeOf));
  if (u === undefined) throw new ConversionError("cannot find a common base type for all elements");
  return items.map((x) => {
    if (typesEqual(typeOf(x), u)) return x;
    const c = getConversion(typeOf(x), u)!;
    return c(x);
  });
}

/** Converts `v` to `to`, or explains why it cannot be. */
export function convert(v: TypedValue, to: Type): TypedValue {
  const from = typeOf(v);
  if (typesEqual(from, to)) return v;
  const conv = getConversion(from, to);
  if (conv === undefined) throw new ConversionError(mismatch(from, to));
  return conv(v);
}

function mismatch(from: Type, to: Type): string {
  if (isPrimitive(to)) return `${to.kind === "bool" ? "a bool" : `a ${to.kind}`} is required`;
  return `${friendlyName(to)} required, but have ${friendlyName(from)}`;
}

// ---- unification ------------------------------------------------------------------------

/**
 * The most general type all of `types` convert to, with the conversion for
 * each (undefined where none is needed), or `[undefined]` when there is none.
 * This follows go-cty's `UnifyUnsafe`, which conditionals use.
 */
export function unify(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  if (types.length === 0) return [undefined, []];
  const count = (kind: Type["kind"]) => types.filter((t) => t.kind === kind).length;
  const maps = count("map");
  const lists = count("list");
  const objects = count("object");
  const tuples = count("tuple");
  const dynamics = count("dynamic");
  const n = types.length;
  if (maps > 0 && maps + dynamics === n) return unifyCollections("map", types, dynamics > 0);
  if (maps > 0 && maps + objects + dynamics === n) {
    const r = unifyObjectsAsMaps(types);
    if (r[0]?.kind === "map") return r;
  } else if (lists > 0 && lists + dynamics === n) {
    return unifyCollections("list", types, dynamics > 0);
  } else if (lists > 0 && lists + tuples + dynamics === n) {
    const r = unifyTuplesAsList(types);
    if (r[0]?.kind === "list") return r;
  } else if (objects > 0 && objects + dynamics === n) {
    return dynamics > 0 ? allDynamic(types) : unifyObjectTypes(types);
  } else if (tuples > 0 && tuples + dynamics === n) {
    return dynamics > 0 ? allDynamic(types) : unifyTupleTypes(types);
  } else if (objects > 0 && tuples > 0) {
    return [undefined, []];
  }
  for (const want of sortTypes(types).map((i) => types[i]!)) {
    const convs: Array<Conversion | undefined> = [];
    let ok = true;
    for (const t of types) {
      if (typesEqual(t, want)) {
        convs.push(undefined);
        continue;
      }
      const c = getConversion(t, want);
      if (c === undefined) {
        ok = false;
        break;
      }
      convs.push(c);
    }
    if (ok) return [want, convs];
  }
  return [undefined, []];
}

function allDynamic(types: readonly Type[]): [Type, Array<Conversion | undefined>] {
  return [DYNAMIC, types.map(() => () => DYNAMIC_VALUE)];
}

function conversionsTo(types: readonly Type[], target: Type): Array<Conversion | undefined> | undefined {
  const convs: Array<Conversion | undefined> = [];
  for (const t of types) {
    if (typesEqual(t, target)) {
      convs.push(undefined);
      continue;
    }
    const c = getConversion(t, target);
    if (c === undefined) return undefined;
    convs.push(c);
  }
  return convs;
}

function unifyCollections(kind: "list" | "map", types: readonly Type[], withDynamic: boolean) {
  if (withDynamic) return allDynamic(types);
  const [elem] = unify(types.map((t) => (t as Type & { kind: "list" | "map" }).elem));
  if (elem === undefined) return [undefined, []] as [undefined, []];
  const target = kind === "list" ? listType(elem) : mapType(elem);
  const convs = conversionsTo(types, target);
  return convs === undefined
    ? ([undefined, []] as [undefined, []])
    : ([target, convs] as [Type, typeof convs]);
}

function unifyObjectTypes(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  const first = (types[0] as Type & { kind: "object" }).attrs;
  for (const t of types.slice(1)) {
    const attrs = (t as Type & { kind: "object" }).attrs;
    if (attrs.size !== first.size || [...attrs.keys()].some((k) => !first.has(k)))
      return unifyObjectsToMap(types);
  }
  const out = new Map<string, Type>();
  for (const name of first.keys()) {
    const [u] = unify(types.map((t) => (t as Type & { kind: "object" }).attrs.get(name)!));
    if (u === undefined) return [undefined, []];
    out.set(name, u);
  }
  const target = objectType(out);
  const convs = conversionsTo(types, target);
  return convs === undefined ? unifyObjectsToMap(types) : [target, convs];
}

function unifyObjectsToMap(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  const attrTypes = types.flatMap((t) => [...(t as Type & { kind: "object" }).attrs.values()]);
  const [elem] = unify(attrTypes);
  if (elem === undefined) return [undefined, []];
  const target = mapType(elem);
  const convs = conversionsTo(types, target);
  return convs === undefined ? [undefined, []] : [target, convs];
}

function unifyTupleTypes(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  const first = (types[0] as Type & { kind: "tuple" }).elems;
  if (types.some((t) => (t as Type & { kind: "tuple" }).elems.length !== first.length))
    return unifyTuplesToList(types);
  const out: Type[] = [];
  for (let i = 0; i < first.length; i++) {
    const [u] = unify(types.map((t) => (t as Type & { kind: "tuple" }).elems[i]!));
    if (u === undefined) return [undefined, []];
    out.push(u);
  }
  const target = tupleType(out);
  const convs = conversionsTo(types, target);
  return convs === undefined ? unifyTuplesToList(types) : [target, convs];
}

function unifyTuplesToList(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  const elemTypes = types.flatMap((t) => (t as Type & { kind: "tuple" }).elems);
  const [elem] = unify(elemTypes);
  if (elem === undefined) return [undefined, []];
  const target = listType(elem);
  const convs = conversionsTo(types, target);
  return convs === undefined ? [undefined, []] : [target, convs];
}

function unifyTuplesAsList(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  const tupleIdx = types.flatMap((t, i) => (t.kind === "tuple" ? [i] : []));
  const [list, tupleConvs] = unifyTuplesToList(tupleIdx.map((i) => types[i]!));
  if (list?.kind !== "list") return [undefined, []];
  const listed = types.map((t, i) => (tupleIdx.includes(i) ? list : t));
  const [target, convs] = unify(listed);
  if (target?.kind !== "list") return [undefined, []];
  tupleIdx.forEach((idx, j) => {
    const inner = tupleConvs[j];
    const outer = convs[idx];
    convs[idx] = outer === undefined ? inner : (v) => outer(inner === undefined ? v : inner(v));
  });
  return [target, convs];
}

function unifyObjectsAsMaps(types: readonly Type[]): [Type | undefined, Array<Conversion | undefined>] {
  const objIdx = types.flatMap((t, i) => (t.kind === "object" ? [i] : []));
  const [map, objConvs] = unifyObjectsToMap(objIdx.map((i) => types[i]!));
  if (map?.kind !== "map") return [undefined, []];
  const mapped = types.map((t, i) => (objIdx.includes(i) ? map : t));
  const [target, convs] = unify(mapped);
  if (target?.kind !== "map") return [undefined, []];
  objIdx.forEach((idx, j) => {
    const inner = objConvs[j];
    const outer = convs[idx];
    convs[idx] = outer === undefined ? inner : (v) => outer(inner === undefined ? v : inner(v));
  });
  return [target, convs];
}

/** Indices of `types`, most general first (go-cty's preference order for unification). */
function sortTypes(types: readonly Type[]): number[] {
  const n = types.length;
  const edges: number[][] = types.map(() => []);
  for (let i = 0; i < n - 1; i++) {
    for (let j = i + 1; j < n; j++) {
      const c = compareTypes(types[i]!, types[j]!);
      if (c < 0) edges[i]!.push(j);
      else if (c > 0) edges[j]!.push(i);
    }
  }
  const inDegree = types.map(() => 0);
  for (const outs of edges) for (const j of outs) inDegree[j]!++;
  const queue = inDegree.flatMap((d, i) => (d === 0 ? [i] : []));
  for (let q = 0; q < queue.length; q++) {
    for (const j of edges[queue[q]!]!) {
      if (--inDegree[j]! === 0) queue.push(j);
    }
  }
  return queue;
}

/** <0 when `a` is more general than `b`, >0 when less, 0 when unordered. */
function compareTypes(a: Type, b: Type): number {
  if (a.kind === "dynamic" || b.kind === "dynamic") {
    if (a.kind !== "dynamic") return -1;
    if (b.kind !== "dynamic") return 1;
    return 0;
  }
  if (isPrimitive(a) && isPrimitive(b)) {
    if (a.kind === "string" || b.kind === "string") {
      if (a.kind !== "string") return 1;
      if (b.kind !== "string") return -1;
      return 0;
    }
  }
  if ((a.kind === "list" && b.kind === "list") || (a.kind === "map" && b.kind === "map")) {
    return compareTypes(a.elem, (b as typeof a).elem);
  }
  let swap = 1;
  if ((a.kind === "tuple" && b.kind === "list") || (a.kind === "object" && b.kind === "map")) {
    [a, b] = [b, a];
    swap = -1;
  }
  if (a.kind === "list" && b.kind === "tuple") return -1 * swap;
  if (a.kind === "map" && b.kind === "object") return -1 * swap;
  const pairwise = (xs: readonly Type[], ys: readonly Type[]): number => {
    let aSuper = false;
    let bSuper = false;
    xs.forEach((x, i) => {
      const c = compareTypes(x, ys[i]!);
      if (c < 0) aSuper = true;
      else if (c > 0) bSuper = true;
    });
    if (aSuper && bSuper) return 0;
    if (aSuper) return -1 * swap;
    if (bSuper) return 1 * swap;
    return 0;
  };
  if (a.kind === "object" && b.kind === "object") {
    if (a.attrs.size !== b.attrs.size) return 0;
    const keys = [...a.attrs.keys()];
    if (keys.some((k) => !b.attrs.has(k))) return 0;
    return pairwise(
      keys.map((k) => a.attrs.get(k)!),
      keys.map((k) => (b as typeof a).attrs.get(k)!),
    );
  }
  if (a.kind === "tuple" && b.kind === "tuple") {
    if (a.elems.length !== b.elems.length) return 0;
    return pairwise(a.elems, b.elems);
  }
  return 0;
}
