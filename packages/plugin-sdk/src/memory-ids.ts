// The id rule of memory records, shared by the kernel (which assigns ids on the write
// path) and memory providers (which name their stored records by it): an id is a
// kebab-case slug of at most 64 characters.

/** The longest id a record gets. */
export const MEMORY_ID_MAX = 64;

/** A kebab-case slug of `text` ("Operator role!" -> "operator-role"); "memory" when nothing is left. */
export function memorySlug(text: string): string {
  const s = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MEMORY_ID_MAX)
    .replace(/-+$/g, "");
  return s || "memory";
}

/** Whether `id` is already a slug (lower-case letters, digits, single dashes). */
export function isMemorySlug(id: string): boolean {
  return id.length <= MEMORY_ID_MAX && /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(id);
}
