const encoder = new TextEncoder();

/**
 * One JSONL line: the record's JSON followed by `\n`.
 *
 * @example
 * ```ts
 * encodeJsonlLine({ record_type: "message", sequence: 1 }); // '{"record_type":"message","sequence":1}\n'
 * ```
 */
export function encodeJsonlLine(record: unknown): string {
  return `${JSON.stringify(record)}\n`;
}

/**
 * UTF-8 bytes of several records as JSONL, each line terminated by `\n`.
 *
 * @example
 * ```ts
 * const bytes = encodeJsonl([{ record_type: "message" }, { record_type: "summary" }]);
 * ```
 */
export function encodeJsonl(records: Iterable<unknown>): Uint8Array {
  let text = "";
  for (const record of records) text += encodeJsonlLine(record);
  return encoder.encode(text);
}
