// Keeps the queue current without reloading the page: the console says when the lanes
// changed (server-sent events) and the page fetches its rows again; where that is not
// possible, it fetches them every few seconds. Decisions never need this script.
"use strict";
(function () {
  const rows = document.getElementById("queue-rows");
  if (!rows) return;
  const source = rows.getAttribute("data-refresh");
  const events = rows.getAttribute("data-events");
  const table = rows.closest("table");
  // Says on the page when the queue stopped updating, and why.
  let notice = null;
  function say(text) {
    if (!notice) {
      notice = document.createElement("p");
      notice.className = "notice refresh-stopped";
      notice.setAttribute("role", "status");
      table.parentNode.insertBefore(notice, table);
    }
    notice.textContent = text;
  }
  function clear() {
    if (notice) {
      notice.remove();
      notice = null;
    }
  }
  let timer = null;
  let stream = null;
  // One fetch at a time; a change that arrives meanwhile fetches once more after it.
  let fetching = false;
  let again = false;
  async function refresh() {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      const answer = await fetch(source, { credentials: "same-origin", cache: "no-store" });
      if (answer.ok) {
        // The server escaped every text in these rows.
        rows.innerHTML = await answer.text();
        clear();
      } else if (answer.status === 401) {
        stop();
        say("Your session ended, so this queue no longer updates. Sign in again to see new proposals.");
      } else {
        say("The queue could not be updated (the console answered " + answer.status + "); it tries again.");
      }
    } catch (_) {
      say("The console cannot be reached, so this queue is not updating; it tries again.");
    } finally {
      fetching = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }
  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
    if (stream) stream.close();
    stream = null;
  }
  function poll() {
    if (stream) stream.close();
    stream = null;
    if (!timer) timer = setInterval(refresh, 3000);
  }
  if (!events || !window.EventSource) {
    poll();
    return;
  }
  stream = new EventSource(events);
  document.documentElement.setAttribute("data-live", "connecting");
  stream.addEventListener("open", function () {
    document.documentElement.setAttribute("data-live", "open");
    // What changed while the stream was being (re)opened.
    refresh();
  });
  stream.addEventListener("lanes", refresh);
  stream.addEventListener("error", function () {
    if (!stream) return;
    if (stream.readyState === EventSource.CLOSED) {
      // Refused (no session, a store that cannot be watched, every stream taken): poll,
      // which also says when the session ended.
      document.documentElement.setAttribute("data-live", "polling");
      poll();
      refresh();
    } else {
      document.documentElement.setAttribute("data-live", "connecting");
    }
  });
})();
