// hookgate console: the few things a page does in the browser. Every value
// from an event is set as text (textContent), never as HTML.
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  // The header checkbox of a list selects every event of the page.
  document.querySelectorAll("input.select-all").forEach(function (all) {
    all.addEventListener("change", function () {
      document.querySelectorAll('input[name="id"][form="selection"]').forEach(function (box) {
        box.checked = all.checked;
      });
    });
  });

  // A URL to copy is selected whole on focus.
  document.querySelectorAll("input.copy").forEach(function (input) {
    input.addEventListener("focus", function () { input.select(); });
  });

  var table = document.getElementById("tail");
  if (table) {
    follow(table);
  }
});

// follow streams new events into the tail table, newest on top.
function follow(table) {
  var state = document.getElementById("tail-state");
  var body = table.querySelector("tbody");
  var url = "/ui/tail/stream";
  if (table.dataset.source) {
    url += "?source=" + encodeURIComponent(table.dataset.source);
  }
  var stream = new EventSource(url);
  stream.onopen = function () { state.textContent = "Following: new events appear as they are stored."; };
  stream.onerror = function () { state.textContent = "Disconnected; reconnecting…"; };
  stream.addEventListener("stored", function (msg) {
    var e = JSON.parse(msg.data);
    var row = document.createElement("tr");
    row.className = "status-" + e.status;
    var link = document.createElement("a");
    link.href = "/ui/events/" + e.id;
    link.textContent = e.id;
    var first = document.createElement("td");
    first.appendChild(link);
    row.appendChild(first);
    [e.received_at, e.source, e.tenant, e.event_id, e.type, e.status].forEach(function (text, i) {
      var cell = document.createElement("td");
      cell.textContent = text;
      if (i === 0) {
        cell.className = "time";
      }
      row.appendChild(cell);
    });
    body.insertBefore(row, body.firstChild);
    while (body.rows.length > 500) {
      body.deleteRow(body.rows.length - 1);
    }
  });
}
