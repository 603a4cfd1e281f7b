// The console's single page: sign-in, client-side routes under /ui, keyboard navigation.
import { clearKey, get, getKey, loadConfig, setKey } from "./api.js";
import { esc, installTableKeys } from "./util.js";
import { jobsPage, jobPage, groupPage } from "./rollouts.js";
import { trajectoryPage } from "./trajectory.js";
import { cleanJobPage } from "./clean.js";
import { sessionPage } from "./session.js";
import { searchPage } from "./search.js";

const view = document.getElementById("view");
let current = null; // AbortController of the page on screen (its fetches and streams stop on leave)

const ROUTES = [
  [/^\/ui\/?$/, jobsPage],
  [/^\/ui\/rollouts\/([^/]+)\/?$/, jobPage],
  [/^\/ui\/rollouts\/([^/]+)\/groups\/([^/]+)\/?$/, groupPage],
  [/^\/ui\/trajectories\/([^/]+)\/?$/, trajectoryPage],
  [/^\/ui\/sessions\/([^/]+)\/?$/, sessionPage],
  [/^\/ui\/clean\/jobs\/([^/]+)\/?$/, cleanJobPage],
  [/^\/ui\/search\/?$/, searchPage],
  [/^\/ui\/signin\/?$/, signinPage],
];

export function navigate(href, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", href); else history.pushState(null, "", href);
  route();
}

async function route() {
  if (current) current.abort();
  current = new AbortController();
  const path = location.pathname;
  document.getElementById("signout").hidden = !getKey();
  if (!getKey() && !/^\/ui\/signin/.test(path)) {
    navigate("/ui/signin?next=" + encodeURIComponent(path + location.search), { replace: true });
    return;
  }
  for (const [re, page] of ROUTES) {
    const m = path.match(re);
    if (!m) continue;
    document.querySelectorAll("header nav a").forEach((a) => a.classList.toggle("here", a.getAttribute("href") === path));
    view.innerHTML = '<p class="muted">Loading…</p>';
    try {
      await page({ view, params: m.slice(1).map(decodeURIComponent), query: new URLSearchParams(location.search),
        signal: current.signal, navigate });
    } catch (err) {
      if (err.name === "AbortError") return;
      view.innerHTML = `<h1>Something went wrong</h1><p class="error">${esc(err.message)}</p>`;
    }
    return;
  }
  view.innerHTML = `<h1>Not found</h1><p>No console page at <code>${esc(path)}</code>. <a href="/ui/">Jobs</a></p>`;
}

async function signinPage({ view, query }) {
  const next = query.get("next") || "/ui/";
  const reason = query.get("reason");
  view.innerHTML = `<div class="signin card"><h1>Sign in</h1>
    <p class="muted">Paste a trajforge API key. It stays in this tab's session storage and is sent only as an
      <code>Authorization</code> header to the API.</p>
    <form id="signin-form"><input id="key" type="password" autocomplete="off" placeholder="tf_…" aria-label="API key" autofocus>
    <button type="submit">Sign in</button></form><p id="signin-error" class="error">${reason ? esc(reason) : ""}</p></div>`;
  view.querySelector("#signin-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const key = view.querySelector("#key").value.trim();
    const error = view.querySelector("#signin-error");
    if (!key) { error.textContent = "Enter a key."; return; }
    try {
      await get("/v1/rollouts", { limit: 1 }, { key });
    } catch (err) {
      error.textContent = err.status === 401 ? "This key was refused: " + err.message : err.message;
      return;
    }
    setKey(key);
    navigate(next.startsWith("/ui/") ? next : "/ui/", { replace: true });
  };
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a[href]");
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || a.target) return;
  const href = a.getAttribute("href");
  if (!href.startsWith("/ui")) return;
  ev.preventDefault();
  navigate(href);
});

document.addEventListener("keydown", (ev) => {
  if (ev.target.closest && ev.target.closest("input, select, textarea")) return;
  if (ev.key === "/") { ev.preventDefault(); navigate("/ui/search"); }
  else if (ev.key === "Backspace" && !ev.target.closest(".tokview")) { ev.preventDefault(); history.back(); }
});

window.addEventListener("tf-unauthorized", (ev) => {
  clearKey();
  if (!/^\/ui\/signin/.test(location.pathname)) {
    navigate("/ui/signin?reason=" + encodeURIComponent("Your key was refused (" + ev.detail + "). Sign in again.") +
      "&next=" + encodeURIComponent(location.pathname), { replace: true });
  }
});

document.getElementById("signout").onclick = () => { clearKey(); navigate("/ui/signin"); };
document.getElementById("goto").onsubmit = (ev) => {
  ev.preventDefault();
  const id = document.getElementById("goto-id").value.trim();
  if (id) navigate(`/ui/${document.getElementById("goto-kind").value}/${encodeURIComponent(id)}`);
};
window.addEventListener("popstate", route);
installTableKeys(navigate);
loadConfig().then(route);
