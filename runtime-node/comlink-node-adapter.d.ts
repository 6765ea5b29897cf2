// comlink 4.4.2 ships its ESM Node adapter as a .mjs without a .d.mts next to it; its
// types are those of the UMD build.
declare module "comlink/dist/esm/node-adapter.mjs" {
  export * from "comlink/dist/umd/node-adapter";
  export { default } from "comlink/dist/umd/node-adapter";
}
