/** The extension field (docs/FORMAT.md: unknown fields are kept) under which pi-only facts ride along. */
export const PI_EXTENSION_FIELD = "pi";

/**
 * What a message imported from pi keeps of its entry so that an export writes it back as
 * it was: the entry kind it came from and the fields sessionfold has no place for.
 */
export interface PiMessageExtension {
  /** `assistant`, `bashExecution`, `custom`, `custom_message` or `branch_summary`. */
  readonly entry: string;
  readonly [field: string]: unknown;
}
