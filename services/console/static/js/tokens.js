// The token view: every token of a trajectory coloured by loss mask, logprob, teacher logprob or
// advantage, with its text and numbers on hover. Long trajectories are drawn in chunks: the first
// chunks at once, the rest as they scroll into view (and in idle time), so a 32k-token page paints
// fast. Keyboard: focus the view, then ←/→ (h/l) move a cursor token, Home/End jump.
import { esc, fmt } from "./util.js";

const CHUNK = 1024;
const EAGER_CHUNKS = 1;
export const MODES = { mask: "loss mask", logprob: "logprob", teacher: "teacher logprob", advantage: "advantage" };

function probColour(lp) {
  if (lp === null || lp === undefined) return "";
  const p = Math.exp(lp);
  // red (unlikely) → yellow → green (likely), light enough to read text on
  const hue = Math.round(120 * Math.max(0, Math.min(1, p)));
  return `hsl(${hue} 85% 80%)`;
}

function advColour(adv, maxAbs) {
  if (!adv) return "";
  const a = Math.min(1, Math.abs(adv) / (maxAbs || 1));
  return adv > 0 ? `rgba(43,138,62,${(0.15 + 0.6 * a).toFixed(2)})` : `rgba(200,55,45,${(0.15 + 0.6 * a).toFixed(2)})`;
}

function shown(text) {
  return esc(text).replace(/\n/g, "↵\n").replace(/\t/g, "→\t");
}

export class TokenView {
  constructor(root, tokens, { advantage = null } = {}) {
    this.root = root;
    this.prompt = tokens.prompt_ids || [];
    this.response = tokens.response_ids || [];
    this.ids = this.prompt.concat(this.response);
    this.mask = tokens.loss_mask || [];
    this.logprobs = tokens.logprobs || [];
    this.teacher = tokens.teacher_logprobs || null;
    this.advantage = advantage;
    this.mode = "mask";
    this.texts = null;
    this.cursor = -1;
    this.rendered = new Set();
    this.maxAdv = Math.abs(advantage || 0);
  }

  get length() { return this.ids.length; }

  info(i) {
    const P = this.prompt.length, r = i - P;
    const out = { index: i, id: this.ids[i], part: r < 0 ? "prompt" : "response" };
    if (this.texts) out.text = this.texts.get(this.ids[i]);
    if (r >= 0) {
      out.mask = this.mask[r] ?? null;
      out.logprob = this.logprobs[r] ?? null;
      if (this.teacher) out.teacher = this.teacher[r] ?? null;
      out.advantage = out.mask ? this.advantage : 0;
    }
    return out;
  }

  colour(i) {
    const r = i - this.prompt.length;
    if (r < 0) return "";
    const m = this.mask[r];
    if (this.mode === "mask") return m ? "#cfe0fb" : "#ececec";
    if (this.mode === "logprob") return probColour(this.logprobs[r]);
    if (this.mode === "teacher") return this.teacher ? probColour(this.teacher[r]) : "";
    return m ? advColour(this.advantage, this.maxAdv) : "";
  }

  chunkHtml(c) {
    const end = Math.min(this.ids.length, (c + 1) * CHUNK), P = this.prompt.length;
    const parts = [];
    for (let i = c * CHUNK; i < end; i++) {
      const bg = this.colour(i);
      const text = this.texts ? this.texts.get(this.ids[i]) : undefined;
      const body = text === undefined ? `⟨${this.ids[i]}⟩` : shown(text);
      const cls = (i < P ? "t p" : "t") + (i === this.cursor ? " cur" : "");
      parts.push(`<span class="${cls}" data-i="${i}"${bg ? ` style="background:${bg}"` : ""}>${body}</span>`);
    }
    return parts.join("");
  }

  mount() {
    const n = Math.ceil(this.ids.length / CHUNK);
    const holders = [];
    for (let c = 0; c < n; c++) {
      holders.push(`<span class="chunk pending" data-c="${c}">tokens ${c * CHUNK}–${Math.min(this.ids.length, (c + 1) * CHUNK) - 1} …</span>`);
    }
    this.root.innerHTML = holders.join("") || '<span class="muted">no tokens</span>';
    this.rendered.clear();
    for (let c = 0; c < Math.min(n, EAGER_CHUNKS); c++) this.renderChunk(c);
    this.observe();
    this.idleFill();
    this.bindEvents();
  }

  renderChunk(c) {
    const el = this.root.querySelector(`.chunk[data-c="${c}"]`);
    if (!el) return;
    el.innerHTML = this.chunkHtml(c);
    el.classList.remove("pending");
    this.rendered.add(c);
  }

  redraw() {
    for (const c of this.rendered) this.renderChunk(c);
  }

  setMode(mode) { this.mode = mode; this.redraw(); }
  setTexts(texts) { this.texts = texts; this.redraw(); }

  observe() {
    if (this.observer) this.observer.disconnect();
    this.observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        const c = Number(e.target.dataset.c);
        if (!this.rendered.has(c)) this.renderChunk(c);
        this.observer.unobserve(e.target);
      }
    }, { root: this.root, rootMargin: "800px" });
    this.root.querySelectorAll(".chunk.pending").forEach((el) => this.observer.observe(el));
  }

  idleFill() {
    const idle = window.requestIdleCallback || ((fn) => setTimeout(() => fn({ timeRemaining: () => 8 }), 50));
    const step = (deadline) => {
      const next = this.root.querySelector(".chunk.pending");
      if (!next || !this.root.isConnected) return;
      while (deadline.timeRemaining() > 4) {
        const el = this.root.querySelector(".chunk.pending");
        if (!el) return;
        this.renderChunk(Number(el.dataset.c));
      }
      idle(step);
    };
    idle(step);
  }

  describe(i) {
    const d = this.info(i);
    const lines = [`#${d.index} id ${d.id} (${d.part})`];
    if (d.text !== undefined) lines.push(`text ${JSON.stringify(d.text)}`);
    if (d.part === "response") {
      lines.push(`loss mask ${d.mask}`);
      lines.push(`logprob ${d.logprob === null ? "–" : `${fmt(d.logprob, 4)} (p ${fmt(Math.exp(d.logprob), 3)})`}`);
      if (this.teacher) lines.push(`teacher logprob ${d.teacher === null ? "–" : fmt(d.teacher, 4)}`);
      lines.push(`advantage ${fmt(d.advantage, 4)}`);
    }
    return lines.join("\n");
  }

  bindEvents() {
    const tip = document.getElementById("tip");
    this.root.onmouseover = (ev) => {
      const t = ev.target.closest("span.t");
      if (!t) return;
      tip.textContent = this.describe(Number(t.dataset.i));
      tip.hidden = false;
    };
    this.root.onmousemove = (ev) => {
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 300) + "px";
      tip.style.top = ev.clientY + 16 + "px";
    };
    this.root.onmouseleave = () => { tip.hidden = true; };
    this.root.onkeydown = (ev) => {
      const moves = { ArrowRight: 1, l: 1, ArrowLeft: -1, h: -1, ArrowDown: 40, ArrowUp: -40 };
      let to = null;
      if (ev.key in moves) to = Math.max(0, this.cursor + moves[ev.key] * (ev.shiftKey ? 10 : 1));
      else if (ev.key === "Home") to = 0;
      else if (ev.key === "End") to = this.ids.length - 1;
      if (to === null) return;
      ev.preventDefault();
      this.moveTo(Math.min(this.ids.length - 1, to));
    };
    this.root.onclick = (ev) => {
      const t = ev.target.closest("span.t");
      if (t) this.moveTo(Number(t.dataset.i));
    };
  }

  moveTo(i) {
    const prev = this.root.querySelector("span.t.cur");
    if (prev) prev.classList.remove("cur");
    this.cursor = i;
    const c = Math.floor(i / CHUNK);
    if (!this.rendered.has(c)) this.renderChunk(c);
    const el = this.root.querySelector(`span.t[data-i="${i}"]`);
    if (el) { el.classList.add("cur"); el.scrollIntoView({ block: "nearest" }); }
    if (this.onCursor) this.onCursor(i, this.describe(i));
  }
}

export function legend(mode) {
  const sw = (colour, label) => `<span class="legend"><i style="background:${colour}"></i>${esc(label)}</span>`;
  if (mode === "mask") return sw("#cfe0fb", "sampled (loss mask 1)") + sw("#ececec", "template / tool (mask 0)") + sw("#fff", "prompt");
  if (mode === "advantage") return sw("rgba(43,138,62,.7)", "positive advantage") + sw("rgba(200,55,45,.7)", "negative") + sw("#fff", "not trained");
  return sw(probColour(Math.log(0.02)), "p≈0") + sw(probColour(Math.log(0.5)), "p≈0.5") + sw(probColour(0), "p≈1") + sw("#fff", "no logprob");
}
