// Keeps the queue current without reloading the page. Decisions never need this script.
"use strict";
(function () {
  const rows = document.getElementById("queue-rows");
  if (!rows) return;
  const source = rows.getAttribute("data-refresh");
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
  async function refresh() {
    try {
      const answer = await fetch(source, { credentials: "same-origin", cache: "no-store" });
      if (answer.ok) {
        // The server escaped every text in these rows.
        rows.innerHTML = await answer.text();
        clear();
      } else if (answer.status === 401) {
        clearInterval(timer);
        say("Your session ended, so this queue no longer updates. Sign in again to see new proposals.");
      } else {
        say("The queue could not be updated (the console answered " + answer.status + "); it tries again.");
      }
    } catch (_) {
      say("The console cannot be reached, so this queue is not updating; it tries again.");
    }
  }
  timer = setInterval(refresh, 3000);
})();
