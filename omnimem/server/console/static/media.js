// Raw content from the cold tier, fetched by URL with the session cookie.
import { rawUrl } from "./api.js";
import { h, link } from "./dom.js";

/** A thumbnail, an audio player or nothing, for a unit that has raw content. */
export function mediaPreview(unit, { large = false } = {}) {
  if (!unit.raw_ref) return null;
  if (unit.modality === "image") {
    return h("img", { class: large ? "raw-image" : "thumb", src: rawUrl(unit.id), loading: "lazy",
      alt: `image: ${unit.summary}` });
  }
  if (unit.modality === "audio") {
    return h("audio", { controls: true, preload: "none", src: rawUrl(unit.id), "aria-label": `audio: ${unit.summary}` });
  }
  return null;
}

/** The frames (and speech) a video unit kept: units whose metadata names it as parent. */
export function videoChildren(video, children) {
  if (!children.length) return null;
  const frames = children.filter((u) => u.modality === "image");
  const speech = children.filter((u) => u.modality !== "image");
  return h("div", { class: "video-parts" },
    frames.length ? h("ul", { class: "frames", "aria-label": "kept frames" },
      frames.map((f) => h("li", {},
        link("unit", [f.id], h("img", { class: "thumb", src: rawUrl(f.id), loading: "lazy",
          alt: `frame at ${f.metadata.timestamp_s ?? "?"} s of ${video.metadata.source ?? "the video"}` })),
        h("span", { class: "hint" }, `${f.metadata.timestamp_s ?? "?"} s`)))) : null,
    speech.length ? h("ul", { class: "speech", "aria-label": "speech in the video" },
      speech.map((s) => h("li", {}, link("unit", [s.id], s.summary)))) : null);
}
