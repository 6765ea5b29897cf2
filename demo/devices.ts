/**
 * Two devices side by side (devices.html): the playground twice, `?device=a` and
 * `?device=b`, each in a frame with its own local store, sync client and offline switch
 * (demo/device.ts), both syncing with the one sync server beside the playground. The page's
 * `?delay=` goes to both (the local model's speed).
 */
import { h } from "./dom.ts";

const query = new URLSearchParams(location.search);
const frames = ["a", "b"].map((device) => {
  const src = new URLSearchParams({ device });
  const delay = query.get("delay");
  if (delay !== null) src.set("delay", delay);
  return h(
    "section",
    { class: "device", "aria-label": `Device ${device.toUpperCase()}` },
    h(
      "h2",
      { class: "device-name" },
      `Device ${device.toUpperCase()}`,
      h("span", { class: "muted small" }, ` · IndexedDB sessionfold-playground-device-${device}`),
    ),
    h("iframe", { name: `device-${device}`, title: `Device ${device.toUpperCase()}`, src: `./?${src}` }),
  );
});
document.getElementById("devices")!.append(...frames);
