// Keeps the queue current without reloading the page. Decisions never need this script.
"use strict";
(function () {
  const rows = document.getElementById("queue-rows");
  if (!rows) return;
  const source = rows.getAttribute("data-refresh");
  async function refresh() {
    try {
      const answer = await fetch(source, { credentials: "same-origin", cache: "no-store" });
      if (answer.ok) {
        // The server escaped every text in these rows.
        rows.innerHTML = await answer.text();
      }
    } catch (_) {
      // Offline for a moment: the next round tries again.
    }
  }
  setInterval(refresh, 3000);
})();
