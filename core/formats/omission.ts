/**
 * A part an exporter could not write because the target format has no place for it
 * (e.g. an image in a DeepCode stream). Exporters report each one to `onOmitted`.
 */
export interface PartOmission {
  /** 0-based index of the message in `PortableSession.messages`. */
  readonly message: number;
  /** The part's `sequence` within that message. */
  readonly part: number;
  /** The part's type, e.g. `file`. */
  readonly type: string;
  /** Why it was left out. */
  readonly reason: string;
}

/** Options every exporter takes. */
export interface FormatWriteOptions {
  /** Called once per part the target format cannot hold (they are left out, nothing else changes). */
  readonly onOmitted?: (omission: PartOmission) => void;
}
