/**
 * A random id with a prefix, e.g. `m_3f9c…` for messages, `sum_…` for summaries.
 *
 * @example
 * ```ts
 * newId("m"); // "m_4a1f0c2e9b7d4c3a8e6f1b2d3c4e5f60"
 * ```
 */
export function newId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`;
}
