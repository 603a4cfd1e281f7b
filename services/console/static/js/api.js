// The REST API with the user's key. The key lives in sessionStorage only (never in a URL, never in
// localStorage), and is sent as a bearer header. Event streams are read with fetch, because
// EventSource cannot send headers.

const KEY = "trajforge.console.key";
let apiBase = "";

export class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

export async function loadConfig() {
  try {
    const resp = await fetch("/ui/config.json", { cache: "no-store" });
    if (resp.ok) apiBase = (await resp.json()).api_base || "";
  } catch (_) { /* same origin by default */ }
}

export const getKey = () => sessionStorage.getItem(KEY);
export const setKey = (key) => sessionStorage.setItem(KEY, key);
export const clearKey = () => sessionStorage.removeItem(KEY);

function url(path, params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") qs.set(k, String(v));
  }
  const q = qs.toString();
  return apiBase + path + (q ? "?" + q : "");
}

function headers(extra, key) {
  const out = { accept: "application/json", ...(extra || {}) };
  const k = key || getKey();
  if (k) out.authorization = "Bearer " + k;
  return out;
}

async function failure(resp) {
  let body = null;
  try { body = await resp.json(); } catch (_) { /* not JSON */ }
  const detail = body && (body.detail || (body.error && body.error.message) || body.title);
  const err = new ApiError(resp.status, `${resp.status}: ${typeof detail === "string" ? detail : resp.statusText}`, body);
  if (resp.status === 401) window.dispatchEvent(new CustomEvent("tf-unauthorized", { detail: err.message }));
  return err;
}

export async function get(path, params, { key, signal } = {}) {
  const resp = await fetch(url(path, params), { headers: headers({}, key), signal });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

export async function post(path, body, { signal } = {}) {
  const resp = await fetch(url(path), { method: "POST", signal,
    headers: headers({ "content-type": "application/json" }), body: JSON.stringify(body || {}) });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// Server-sent events over fetch: calls onEvent(name, data) per event until the stream ends or
// `signal` aborts. Resolves when the server closes the stream.
export async function events(path, onEvent, { signal } = {}) {
  const resp = await fetch(url(path), { headers: headers({ accept: "text/event-stream" }), signal });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      dispatch(block, onEvent);
    }
  }
  if (buf.trim()) dispatch(buf, onEvent);
}

function dispatch(block, onEvent) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const at = line.indexOf(":");
    const field = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return;
  const text = data.join("\n");
  let parsed = text;
  try { parsed = JSON.parse(text); } catch (_) { /* plain text event */ }
  onEvent(name, parsed);
}

// Text of each token id, from the inference service's detokenize (unique ids, in chunks).
const texts = new Map();
export async function tokenTexts(ids, { signal } = {}) {
  const missing = [...new Set(ids)].filter((i) => !texts.has(i));
  for (let at = 0; at < missing.length; at += 4096) {
    const part = missing.slice(at, at + 4096);
    const resp = await fetch(url("/inference/detokenize"), { method: "POST", signal,
      headers: headers({ "content-type": "application/json" }),
      body: JSON.stringify({ tokens: part, return_token_texts: true }) });
    if (!resp.ok) throw await failure(resp);
    const body = await resp.json();
    if (!Array.isArray(body.token_texts)) throw new ApiError(500, "the tokenizer returned no per-token texts");
    part.forEach((id, i) => texts.set(id, body.token_texts[i]));
  }
  return texts;
}
