/* agentledger dashboard: keyboard stepping and the side panel of the session page.
 *
 * Plain JS, no dependencies. Event data is never parsed or inserted as HTML here: the panel
 * shows clones of server-rendered (escaped) nodes, and every other text goes through
 * textContent. Keys: j/k next/previous event, o or Enter expand, w why & impact, t tree.
 */
(function () {
  "use strict";

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  ready(function () {
    var table = document.getElementById("timeline");
    if (!table) return;
    var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr.ev"));
    var panelTitle = document.getElementById("panel-title");
    var panelWhy = document.getElementById("panel-why");
    var panelBody = document.getElementById("panel-body");
    var tree = document.getElementById("tree");
    var current = -1;

    function rowIndex(id) {
      for (var i = 0; i < rows.length; i++) if (rows[i].id === id) return i;
      return -1;
    }

    function showPanel(row) {
      panelTitle.textContent = "";
      var badge = row.querySelector(".badge");
      if (badge) panelTitle.appendChild(badge.cloneNode(true));
      var tool = row.querySelector("td.tool");
      if (tool && tool.textContent.trim()) {
        var b = document.createElement("b");
        b.className = "tool";
        b.textContent = " " + tool.textContent.trim();
        panelTitle.appendChild(b);
      }
      panelWhy.href = row.getAttribute("data-why");
      panelWhy.hidden = false;
      panelBody.textContent = "";
      var meta = document.createElement("p");
      meta.className = "meta";
      var cells = row.querySelectorAll("td");
      meta.textContent = "#" + cells[0].textContent.trim() + " · " + cells[1].textContent.trim() +
        (cells[5].textContent.trim() ? " · tokens " + cells[5].textContent.trim() : "") +
        (cells[6].textContent.trim() ? " · " + cells[6].textContent.trim() : "");
      panelBody.appendChild(meta);
      var parent = row.getAttribute("data-parent");
      if (parent) {
        var p = document.createElement("p");
        p.className = "meta";
        var link = document.createElement("a");
        link.href = "#" + parent;
        link.textContent = "parent event";
        link.className = "parent-link";
        link.addEventListener("click", function (ev) {
          var i = rowIndex(parent);
          if (i >= 0) { ev.preventDefault(); select(i, true); }
        });
        p.appendChild(link);
        if (rowIndex(parent) < 0) p.appendChild(document.createTextNode(" (on another page)"));
        panelBody.appendChild(p);
      }
      [["data", "pre.json.data"], ["record", "pre.json.rec"]].forEach(function (part) {
        var pre = row.querySelector(part[1]);
        if (!pre) return;
        var h = document.createElement("h3");
        h.textContent = part[0];
        panelBody.appendChild(h);
        var copy = pre.cloneNode(true);
        copy.hidden = false;
        panelBody.appendChild(copy);
      });
    }

    function markTree(id) {
      if (!tree) return;
      var old = tree.querySelectorAll("li.sel");
      for (var i = 0; i < old.length; i++) old[i].classList.remove("sel");
      var items = tree.querySelectorAll("li[data-id]");
      for (var j = 0; j < items.length; j++) {
        if (items[j].getAttribute("data-id") === id) {
          items[j].classList.add("sel");
          var list = items[j].parentNode;
          if (tree.open && list.scrollHeight > list.clientHeight) {
            var top = items[j].offsetTop - list.offsetTop;
            if (top < list.scrollTop || top > list.scrollTop + list.clientHeight - 20) {
              list.scrollTop = Math.max(0, top - list.clientHeight / 2);
            }
          }
          break;
        }
      }
    }

    function select(i, scroll) {
      if (i < 0 || i >= rows.length) return;
      if (current >= 0) {
        rows[current].classList.remove("sel");
        rows[current].setAttribute("aria-selected", "false");
      }
      current = i;
      var row = rows[i];
      row.classList.add("sel");
      row.setAttribute("aria-selected", "true");
      if (scroll) row.scrollIntoView({ block: "nearest" });
      showPanel(row);
      markTree(row.getAttribute("data-id"));
      if (history.replaceState) history.replaceState(null, "", "#" + row.id);
    }

    function go(link, where) {
      if (link && link.href) window.location.href = link.href.split("#")[0] + "#" + where;
    }

    function step(delta) {
      var next = current + delta;
      if (next >= rows.length) return go(document.querySelector(".pager a.next"), "first");
      if (next < 0) {
        if (current === 0) return go(document.querySelector(".pager a.prev"), "last");
        next = 0;
      }
      select(next, true);
    }

    function toggle() {
      if (current < 0) return;
      var details = rows[current].querySelector("details");
      if (details) details.open = !details.open;
    }

    rows.forEach(function (row, i) {
      row.addEventListener("click", function (ev) {
        if (ev.target.closest("a")) return;
        if (ev.target.closest("summary")) { select(i, false); return; }
        select(i, false);
      });
    });

    if (tree) {
      tree.addEventListener("click", function (ev) {
        var a = ev.target.closest("a[data-target]");
        if (!a) return;
        var i = rowIndex(a.getAttribute("data-target"));
        if (i >= 0) { ev.preventDefault(); select(i, true); }
      });
    }

    document.addEventListener("keydown", function (ev) {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      var t = ev.target;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      switch (ev.key) {
        case "j": step(1); break;
        case "k": step(-1); break;
        case "o": case "Enter": toggle(); break;
        case "w": if (current >= 0) window.location.href = rows[current].getAttribute("data-why"); break;
        case "t": if (tree) { tree.open = !tree.open; } break;
        default: return;
      }
      ev.preventDefault();
    });

    var hash = window.location.hash.slice(1);
    var focused = table.querySelector("tr.ev.focus");
    if (hash === "first") select(0, false);
    else if (hash === "last") select(rows.length - 1, true);
    else if (hash && rowIndex(hash) >= 0) select(rowIndex(hash), true);
    else if (focused) select(rows.indexOf(focused), true);
    else if (rows.length) select(0, false);
  });
})();
