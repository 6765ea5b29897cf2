/** The only `meta.json` schema version this reader knows (core/schema/meta.ts re-exports it). */
export const META_SCHEMA_VERSION = 1 as const;
