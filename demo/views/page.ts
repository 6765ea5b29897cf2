/**
 * The whole page as the {@linkcode AppView} of an `App`: it wires every control of
 * index.html to the app's actions once, and renders each region the app names from the
 * app's state. The streaming turn changes at every event, so its region is drawn at most
 * once per animation frame.
 */
import type { App } from "../app.ts";
import type { AppView } from "../store.ts";
import { byId } from "../dom.ts";
import { LOCAL_MODEL_SPEEDS } from "../provider-choice.ts";
import type { Region } from "../state.ts";
import { renderBanners } from "./banners.ts";
import { confirmDelete } from "./chrome.ts";
import { bindComposer } from "./composer.ts";
import { renderConversation, renderLiveTurn, scrollConversationToEnd } from "./conversation.ts";
import { bindExportDialog } from "./export-dialog.ts";
import { bindModelPanel } from "./model-panel.ts";
import { renderSidePanel } from "./panel.ts";
import { bindPanelTabs } from "./panel-tabs.ts";
import { bindSessionActions, renderSessionHeader } from "./session-header.ts";
import { renderSessionList } from "./session-list.ts";
import { bindSettingsDialog } from "./settings-dialog.ts";
import { bindTheme } from "./theme.ts";
import { toast } from "./toast.ts";

/** Wires the page to `app`; pass the result to `app.start`. */
export function mountPage(app: App): AppView {
  const composer = bindComposer(app);
  bindSessionActions(app);
  bindSettingsDialog({ current: () => app.state.settingsText, save: (text) => app.saveSettings(text) });
  bindExportDialog(app);
  bindPanelTabs();
  bindTheme();
  bindModelPanel(byId("model-panel"), {
    speeds: LOCAL_MODEL_SPEEDS,
    chunkDelayMs: () => app.chunkDelayMs,
    setChunkDelayMs: (ms) => (app.chunkDelayMs = ms),
    useEndpoint: (provider) => app.useEndpoint(provider),
    useLocal: () => app.useLocalModel(),
  });

  let liveFrame = 0;
  /** The reply the live turn last drew: a new one is drawn at once, later chunks once a frame. */
  let liveReplyDrawn: string | undefined;
  const renderRegion: Record<Region, () => void> = {
    list: () => renderSessionList(app),
    header: () => renderSessionHeader(app),
    banners: () => renderBanners(app),
    messages: () => renderConversation(app),
    live: () => {
      const reply = app.state.run?.reply?.id;
      if (reply !== undefined && reply !== liveReplyDrawn) {
        // A busy page may give no frame before a short reply ends, and the turn's end cancels the
        // frame: without this the reply would only ever appear committed.
        cancelAnimationFrame(liveFrame);
        liveFrame = 0;
        liveReplyDrawn = reply;
        renderLiveTurn(app);
        return;
      }
      if (liveFrame) return;
      liveFrame = requestAnimationFrame(() => {
        liveFrame = 0;
        renderLiveTurn(app);
      });
    },
    panel: () => renderSidePanel(app),
    composer: () => composer.render(),
  };
  return {
    render: (regions) => {
      for (const region of regions) renderRegion[region]();
    },
    scrollToEnd: scrollConversationToEnd,
    turnStarted: () => composer.clear(),
    turnEnded: (text, restore) => {
      // The turn's last frame would only draw what the full render that follows draws.
      cancelAnimationFrame(liveFrame);
      liveFrame = 0;
      if (restore) composer.restore(text);
    },
    focusComposer: () => composer.focus(),
    toast,
    confirm: confirmDelete,
  };
}
