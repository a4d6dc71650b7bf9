// The web operator panel's page. Every text from the robot (object names, the language model's
// candidate goals, the analysis' feedback) is put in with textContent: never as markup.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  let csrf = "";
  let clockOffset = 0; // server time - local time, in ms
  let source = null;
  let live = false;
  const cards = new Map(); // question id -> {el, q, sent}

  function show(section, visible) { $(section).hidden = !visible; }

  function setLink(text, down) {
    $("link").textContent = text;
    $("link").classList.toggle("down", Boolean(down));
  }

  function showPairing(message) {
    if (source) { source.close(); source = null; }
    live = false;
    for (const entry of cards.values()) entry.el.remove();
    cards.clear();
    show("questions", false);
    show("history", false);
    show("pairing", true);
    $("who").textContent = "";
    setLink("not paired", true);
    $("pair-status").textContent = message || "";
  }

  async function pair(code) {
    $("pair-status").textContent = "Pairing…";
    let response;
    try {
      response = await fetch("/api/pair", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: code.trim() }),
      });
    } catch (err) {
      $("pair-status").textContent = "The robot did not answer; try again.";
      return false;
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      $("pair-status").textContent = body.message || `Pairing refused (${response.status}).`;
      return false;
    }
    $("pair-code").value = "";
    return true;
  }

  async function session() {
    let response;
    try {
      response = await fetch("/api/session", { credentials: "same-origin" });
    } catch (err) {
      setLink("robot unreachable, retrying…", true);
      setTimeout(session, 3000);
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (response.status === 401 || response.status === 403) {
      showPairing(body.message);
      return;
    }
    if (!response.ok) {
      setLink(`error ${response.status}, retrying…`, true);
      setTimeout(session, 3000);
      return;
    }
    csrf = body.csrf;
    clockOffset = body.server_time * 1000 - Date.now();
    $("who").textContent = `Paired as ${body.operator}`;
    show("pairing", false);
    show("questions", true);
    show("history", true);
    connect();
  }

  function connect() {
    if (source) source.close();
    source = new EventSource("/api/events");
    source.addEventListener("state", (event) => {
      live = true;
      setLink("live");
      render(JSON.parse(event.data));
    });
    source.addEventListener("unpaired", () => showPairing("This pairing is no longer valid: pair again."));
    source.onerror = () => {
      // A dropped connection answers nothing: the buttons wait for the next live state.
      live = false;
      setLink("connection lost, reconnecting…", true);
      refreshButtons();
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        setTimeout(session, 2000); // 401 after a revocation: session() shows the pairing form
      }
    };
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function render(state) {
    clockOffset = state.server_time * 1000 - Date.now();
    const ids = new Set(state.pending.map((q) => q.id));
    for (const [id, entry] of cards) {
      if (!ids.has(id) && !entry.el.classList.contains("closed")) closeCard(entry, entry.sent
        ? `Answered: ${entry.sent}.`
        : "No longer waiting (answered by another operator, timed out, or withdrawn by the robot).");
    }
    for (const q of state.pending) {
      const entry = cards.get(q.id);
      if (entry && !entry.el.classList.contains("closed")) {
        entry.q = q; // a fresh nonce for this live connection
      } else if (!entry) {
        const made = { el: makeCard(q), q, sent: "" };
        cards.set(q.id, made);
        $("cards").append(made.el);
      }
    }
    $("empty").hidden = ids.size > 0;
    $("count").textContent = ids.size ? `(${ids.size})` : "";
    renderHistory(state.history);
    refreshButtons();
    tick();
  }

  function closeCard(entry, message) {
    entry.el.classList.add("closed");
    entry.el.querySelector(".hint").textContent = message;
    refreshButtons();
    setTimeout(() => { entry.el.remove(); cards.delete(entry.q.id); }, 6000);
  }

  function makeCard(q) {
    const node = $("card-template").content.firstElementChild.cloneNode(true);
    node.dataset.id = q.id;
    node.dataset.objectId = q.object_id;
    node.querySelector(".question").textContent = q.question;
    node.querySelector(".object").textContent = q.object || q.object_id || "—";
    node.querySelector(".where").textContent = q.where || q.object_description || "—";
    if (q.candidate) node.querySelector(".candidate").textContent = q.candidate;
    else node.querySelector(".candidate-row").hidden = true;
    node.querySelector(".expected").textContent = `Please ${q.expected}.`;
    if (q.has_image) {
      const img = node.querySelector(".camera");
      img.src = `/api/questions/${encodeURIComponent(q.id)}/image`;
      img.hidden = false;
    }
    if (q.wants_description) {
      node.querySelector(".yes").hidden = true;
      node.querySelector(".no").textContent = "Skip (no goal)";
      node.querySelector(".buttons").classList.add("single");
    }
    const reasons = node.querySelector(".reasons");
    for (const line of q.reasons) reasons.append(el("li", "", line));
    const list = node.querySelector(".candidates");
    for (const c of q.candidates) {
      const item = el("li", c.asked ? "asked" : "");
      item.append(el("span", "", `#${c.id} ${c.text}`));
      const viable = c.viable === null ? "not analysed" : (c.viable ? "grounded" : "not groundable");
      item.append(el("span", "detail", `score ${c.score.toFixed(3)} · ${c.source_text} · ${viable}`));
      if (c.repair_feedback) item.append(el("span", "detail", `repair of #${c.parent} after: “${c.repair_feedback}”`));
      for (const m of c.mismatches) item.append(el("span", "detail", `${m.kind}: ${m.feedback || m.detail}`));
      if (c.literals.length) item.append(el("span", "detail", `goal: ${c.literals.join(", ")}`));
      list.append(item);
    }
    node.querySelector(".yes").addEventListener("click", () => send(q.id, "yes", ""));
    node.querySelector(".no").addEventListener("click", () => send(q.id, "no", ""));
    node.querySelector(".words").addEventListener("submit", (event) => {
      event.preventDefault();
      const text = node.querySelector(".text").value;
      send(q.id, "words", text);
    });
    return node;
  }

  function refreshButtons() {
    for (const entry of cards.values()) {
      const off = !live || entry.busy || entry.el.classList.contains("closed") || entry.expired;
      for (const button of entry.el.querySelectorAll("button")) button.disabled = off;
      entry.el.querySelector(".text").disabled = off;
    }
  }

  async function send(id, kind, text) {
    const entry = cards.get(id);
    if (!entry || !live || entry.busy) return;
    const hint = entry.el.querySelector(".hint");
    entry.busy = true;
    refreshButtons();
    hint.textContent = "Sending…";
    let response;
    try {
      response = await fetch("/api/answer", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ request_id: id, nonce: entry.q.nonce, answer: kind, text }),
      });
    } catch (err) {
      entry.busy = false;
      hint.textContent = "Not sent: the robot did not answer. Nothing was confirmed.";
      refreshButtons();
      return;
    }
    const body = await response.json().catch(() => ({}));
    entry.busy = false;
    if (response.ok) {
      entry.sent = body.answer === "description" ? `“${body.description}”` : body.answer;
      entry.el.classList.add("answered");
      closeCard(entry, `Answered: ${entry.sent}.`);
    } else if (response.status === 409) {
      closeCard(entry, body.message || "This question is no longer waiting.");
    } else if (response.status === 401) {
      showPairing(body.message);
    } else if (response.status === 403 && /CSRF/.test(body.message || "")) {
      hint.textContent = "The session was renewed; please answer again.";
      session();
    } else {
      hint.textContent = body.message || `Refused (${response.status}).`;
    }
    refreshButtons();
  }

  function renderHistory(rows) {
    const list = $("history-list");
    list.replaceChildren();
    $("history-empty").hidden = rows.length > 0;
    for (const row of rows) {
      const item = el("li");
      const said = row.answer === "description" ? `“${row.description}”` : row.answer;
      item.append(el("span", `said ${row.answer}`, said), document.createTextNode(" — "));
      item.append(document.createTextNode(row.question || row.request_id));
      const when = new Date((row.answered_at || 0) * 1000).toLocaleTimeString();
      item.append(el("span", "when", `${when} · via ${row.client || "?"}`));
      list.append(item);
    }
  }

  function tick() {
    const now = (Date.now() + clockOffset) / 1000;
    for (const entry of cards.values()) {
      const timer = entry.el.querySelector(".timer");
      if (entry.el.classList.contains("closed")) { timer.textContent = ""; continue; }
      if (!entry.q.deadline) { timer.textContent = entry.q.remaining_text; continue; }
      const left = Math.max(0, Math.round(entry.q.deadline - now));
      const wasExpired = entry.expired;
      entry.expired = left <= 0;
      timer.textContent = entry.expired ? "Time is up: it counts as no answer, never as yes."
        : `${left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`} left (then it counts as no answer)`;
      timer.classList.toggle("low", left < 30);
      if (entry.expired !== wasExpired) refreshButtons();
    }
  }

  $("pair-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await pair($("pair-code").value)) session();
  });
  setInterval(tick, 1000);

  (async () => {
    const fragment = location.hash.match(/^#pair=([A-Za-z0-9-]{1,64})$/);
    if (fragment) {
      history.replaceState(null, "", location.pathname); // the code leaves the address bar
      await pair(fragment[1]);
    }
    session();
  })();
})();
