// The 24/7 page: draws what the server sends (the board, the hand, scores) and sends
// the person's clicks. All rules live on the server; the page only knows which cells and
// values the server says are legal.
"use strict";

// The board's sizes and colours (env/render_svg.py `page_style`, put in the page by the server).
const STYLE = JSON.parse(document.getElementById("board-style").textContent);
const BOARD_X0 = STYLE.pad + STYLE.edge, BOARD_Y0 = STYLE.pad + STYLE.edge;  // the top left of cell (0,0), in pixels

let game = null;        // the last state the server sent
let cell = null;        // the selected board cell, or null
let value = null;       // the selected hand value, or null
let busy = false;       // a request is in flight
let replayStep = null;  // the step shown while replaying a finished game
let hintCell = null;    // the cell of the hint's move, outlined until the next move

const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

// Run `work` with the page busy (no clicks): its error, if any, goes in the error line.
async function whileBusy(work) {
  busy = true;
  $("error").textContent = "";
  document.body.classList.add("busy");
  showStatus();
  try {
    await work();
  } catch (err) {
    $("error").textContent = err.message;
  } finally {
    busy = false;
    document.body.classList.remove("busy");
    showStatus();
  }
}

async function call(method, path, body, onDone) {
  if (busy) return;
  await whileBusy(async () => onDone(await api(method, path, body)));
}

function setGame(state) {
  if (!game || game.game !== state.game) showChoice(state);  // a new game: New game starts its variant again
  game = state;
  cell = null;
  value = null;
  replayStep = null;
  hintCell = null;
  $("hintbox").hidden = true;
  $("reviewbox").hidden = true;
  draw(state);
}

// The players and teams controls: what New game starts. Teams only with 4 players.
function showChoice(state) {
  $("players").value = String(state.players);
  $("team").checked = state.team;
  teamsOnlyForFour();
}

function teamsOnlyForFour() {
  const four = $("players").value === "4";
  $("team").disabled = !four;
  if (!four) $("team").checked = false;
}

function seatList(seats) {
  return seats.length === 1 ? `seat ${seats[0]}` : `seats ${seats.slice(0, -1).join(", ")} and ${seats.at(-1)}`;
}

// What is being played, in words: "4 players, teams: you (seat 0) and seat 2 against seats 1 and 3".
function variantText(state) {
  const others = [...Array(state.players).keys()].filter((s) => s !== state.seat);
  const you = `you (seat ${state.seat})`;
  if (!state.team) return `${state.players} players: ${you} against ${seatList(others)}`;
  const partner = (state.seat + 2) % 4;
  const them = others.filter((s) => s !== partner);
  return `${state.players} players, teams: ${you} and seat ${partner} against ${seatList(them)}`;
}

// --- the board, drawn as env/render_svg.py `board_svg(view, caption=False, marks=...)` draws
// it, character for character (a browser test compares the two), from `render_svg.board_data`.
const num = (x) => String(Number(x.toPrecision(6)));  // Python's format(x, "g")
const escapeText = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
  .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");

function paint(attr, colour) {
  if (colour === null) return ` ${attr}="none"`;
  if (colour.length === 9) {  // #rrggbbaa
    return ` ${attr}="${colour.slice(0, 7)}" ${attr}-opacity="${(parseInt(colour.slice(7), 16) / 255).toFixed(3)}"`;
  }
  return ` ${attr}="${colour}"`;
}

function rect(x, y, w, h, fill, stroke = null, width = 1, rx = 0, dash = false) {
  let extra = rx ? ` rx="${num(rx)}"` : "";
  if (stroke) extra += ` stroke-width="${num(width)}"` + (dash ? ' stroke-dasharray="5 3"' : "");
  return `<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}"${paint("fill", fill)}${paint("stroke", stroke)}${extra}/>`;
}

function circle(cx, cy, r, fill, stroke, width) {
  return `<circle cx="${num(cx)}" cy="${num(cy)}" r="${num(r)}"${paint("fill", fill)}${paint("stroke", stroke)} stroke-width="${num(width)}"/>`;
}

function text(x, y, t, size, colour, anchor = "middle", bold = false) {
  return `<text x="${num(x)}" y="${num(y)}" font-size="${num(size)}" fill="${colour}" text-anchor="${anchor}"`
    + ` dominant-baseline="central"${bold ? ' font-weight="bold"' : ""}>${escapeText(t)}</text>`;
}

function boardSvg(board) {
  const S = STYLE, C = S.colours, cellPx = S.cell, n = S.size, size = n * cellPx;
  const x0 = BOARD_X0, y0 = BOARD_Y0;
  const width = x0 + size + S.pad + Math.floor(S.edge / 2), height = y0 + size + 10 + S.pad;
  const double = new Set(S.double);
  const at = (c) => [x0 + (c % n) * cellPx, y0 + Math.floor(c / n) * cellPx];
  const lastCell = board.last >= 0 && board.last < S.pass ? Math.floor(board.last / S.max_value) : -1;
  const marked = new Set(board.marks.map((m) => m[0]));
  const stones = new Set(board.timeouts);
  const shapes = [rect(x0 - 4, y0 - 4, size + 8, size + 8, C.background, C.board_edge, 2, 6)];
  board.cells.forEach((v, c) => {
    const [x, y] = at(c), cx = x + cellPx / 2, cy = y + cellPx / 2;
    if (double.has(c)) shapes.push(rect(x, y, cellPx, cellPx, C.double_tint));
    if (v) {
      shapes.push(rect(x + 5, y + 5, cellPx - 10, cellPx - 10, C.tile, C.tile_edge, 1.5, 5));
      shapes.push(text(cx, cy + 1, String(v), 22, c === lastCell ? C.last : C.ink, "middle", true));
      if (double.has(c)) shapes.push(text(x + cellPx - 9, y + 12, "2×", 8.5, C.double_ink, "end", true));
    } else if (double.has(c) && marked.has(c)) {
      // a ghost tile goes here; its "2x" goes in the corner, drawn with the mark
    } else if (stones.has(c)) {
      shapes.push(circle(cx, cy, cellPx * 0.34, C.stone, C.stone_rim, 2));
    } else if (double.has(c)) {
      shapes.push(text(cx, cy, "2×", 13, C.double_ink, "middle", true));
    }
  });
  for (let k = 0; k <= n; k++) {
    shapes.push(rect(x0 + k * cellPx - 0.5, y0, 1, size, C.grid), rect(x0, y0 + k * cellPx - 0.5, size, 1, C.grid));
  }
  if (lastCell >= 0) {
    const [x, y] = at(lastCell);
    shapes.push(rect(x + 1.5, y + 1.5, cellPx - 3, cellPx - 3, null, C.last, 3, 4));
  }
  for (const [c, v, label, colour] of board.marks) {
    const [x, y] = at(c), empty = !board.cells[c];
    shapes.push(rect(x + 4, y + 4, cellPx - 8, cellPx - 8, empty ? C.ghost : null, colour, 2.5, 5, true));
    if (empty) {
      shapes.push(text(x + cellPx / 2, y + cellPx / 2 + 1, String(v), 20, colour, "middle", true));
      if (double.has(c)) shapes.push(text(x + cellPx - 9, y + 12, "2×", 8.5, C.double_ink, "end", true));
    }
    if (label) shapes.push(text(x + 8, y + cellPx - 11, label, 9.5, colour, "start", true));
  }
  for (let k = 0; k < n; k++) {
    shapes.push(text(x0 + k * cellPx + cellPx / 2, y0 - S.edge / 2 - 3, String(k), 10, C.muted),
                text(x0 - S.edge / 2 - 3, y0 + k * cellPx + cellPx / 2, String(k), 10, C.muted));
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${num(width)}" height="${num(height)}" `
    + `viewBox="0 0 ${num(width)} ${num(height)}" font-family="${S.font}">\n`
    + `<rect x="0" y="0" width="${num(width)}" height="${num(height)}" fill="${C.paper}"/>\n${shapes.join("\n")}\n</svg>`;
}

function legalValues(c) { return (game && game.legal[String(c)]) || []; }

function draw(state) {
  $("svg").innerHTML = boardSvg(state.board);
  drawCells(state);
  drawHand(state);
  drawScores(state);
  drawReplies(state.replies);
  drawLog(state.moves);
  $("variant").textContent = variantText(state);
  $("bag").textContent = `bag: ${state.bag} tile${state.bag === 1 ? "" : "s"}` + (state.partner_shows ? ` · your partner shows you a ${state.partner_shows}` : "");
  $("pass").hidden = !state.can_pass;
  // no undo once the game is over: the record (the whole deal) can be seen then
  $("undo").disabled = state.over || (state.step !== null && state.step !== undefined);
  $("hint").disabled = !state.your_turn;
  $("review").hidden = !state.over;
  const replay = $("replay");
  replay.hidden = !state.over;
  if (state.over) {
    const step = state.step === null || state.step === undefined ? state.steps : state.step;
    $("stepinfo").textContent = `move ${step} / ${state.steps}`;
    $("download").href = `/api/record?game=${encodeURIComponent(state.game)}`;
  }
  showStatus();
}

function drawCells(state) {
  const g = { x0: BOARD_X0, y0: BOARD_Y0, cell: STYLE.cell, size: STYLE.size };
  const layer = $("cells");
  layer.innerHTML = "";
  for (let c = 0; c < g.size * g.size; c++) {
    const button = document.createElement("button");
    const row = Math.floor(c / g.size), col = c % g.size;
    button.className = "cell";
    button.dataset.cell = c;
    button.title = `(${row},${col})`;
    Object.assign(button.style, { left: `${g.x0 + col * g.cell}px`, top: `${g.y0 + row * g.cell}px`,
                                  width: `${g.cell}px`, height: `${g.cell}px` });
    const values = legalValues(c);
    if (values.length && (value === null || values.includes(value))) button.classList.add("legal");
    if (c === cell) button.classList.add("selected");
    if (c === hintCell) button.classList.add("hinted");
    if (state.replies.some((m) => m.action !== null && m.action < 490 && Math.floor(m.action / 10) === c)) {
      button.classList.add("ai-move");
    }
    button.addEventListener("click", () => clickCell(c));
    layer.appendChild(button);
  }
}

function drawHand(state) {
  const hand = $("hand");
  hand.innerHTML = "";
  const playable = new Set(Object.values(state.legal).flat());
  state.hand.forEach((v, i) => {
    const button = document.createElement("button");
    button.className = "tile";
    button.textContent = v;
    button.dataset.value = v;
    button.dataset.index = i;
    if (playable.has(v) && (cell === null || legalValues(cell).includes(v))) button.classList.add("playable");
    if (v === value) button.classList.add("selected");
    button.addEventListener("click", () => clickTile(v));
    hand.appendChild(button);
  });
  const shows = $("shows");
  shows.innerHTML = "";
  state.shows.forEach((v) => {
    const button = document.createElement("button");
    button.textContent = `show ${v}`;
    button.dataset.show = v;
    button.addEventListener("click", () => send(490 + v));
    shows.appendChild(button);
  });
}

function drawScores(state) {
  const body = $("scores").querySelector("tbody");
  body.innerHTML = "";
  for (let s = 0; s < state.players; s++) {
    const tr = document.createElement("tr");
    tr.id = `seat-${s}`;
    if (s === state.seat) tr.classList.add("you");
    if (!state.over && s === state.current) tr.classList.add("mover");
    const place = state.ranking ? ` (${ordinal(state.ranking[s] + 1)})` : "";
    const partner = state.team && s === (state.seat + 2) % 4;
    const name = s === state.seat ? "you" : (partner ? "partner, " : "") + state.labels[s];
    tr.innerHTML = `<td>${s}</td><td></td><td class="score" id="score-${s}">${state.scores[s]}</td>` +
                   `<td id="tiles-${s}">${state.hand_sizes[s]}</td>`;
    tr.children[1].textContent = name + place;
    body.appendChild(tr);
  }
  if (state.team) {
    const tr = document.createElement("tr");
    const sc = state.scores;
    const yours = (team) => (team === state.seat % 2 ? " (yours)" : "");
    tr.innerHTML = `<td colspan="4">teams: 0+2${yours(0)} ${sc[0] + sc[2]} · 1+3${yours(1)} ${sc[1] + sc[3]}</td>`;
    body.appendChild(tr);
  }
}

function ordinal(n) { return n + (["th", "st", "nd", "rd"][n] || "th"); }

function moveText(m) {
  const who = game && m.seat === game.seat ? "you" : `seat ${m.seat}`;
  return `${who}: ${m.move}` + (m.action !== null && m.action < 490 ? `  +${m.points} (${m.breakdown})` : "");
}

function drawReplies(replies) {
  const box = $("replies");
  box.innerHTML = "";
  if (!replies.length) { box.hidden = true; return; }
  box.hidden = false;
  replies.forEach((m) => {
    const p = document.createElement("div");
    p.className = "reply";
    p.textContent = moveText(m);
    box.appendChild(p);
  });
}

function drawLog(moves) {
  const log = $("log");
  log.innerHTML = "";
  moves.forEach((m) => {
    const li = document.createElement("li");
    li.textContent = moveText(m);
    log.appendChild(li);
  });
  log.scrollTop = log.scrollHeight;
}

function showStatus() {
  if (!game) return;
  let text;
  if (busy) text = "thinking…";
  else if (game.over) {
    const best = Math.min(...game.ranking);
    const winners = game.ranking.map((r, s) => (r === best ? s : -1)).filter((s) => s >= 0);
    text = "game over: " + (winners.includes(game.seat) ? (winners.length > 1 ? "a shared win" : "you win!") : "you lose")
      + (game.saved ? ` · saved to ${game.saved}` : "");
  } else if (game.your_turn) {
    text = game.can_pass ? "none of your tiles fits: pass" : "your move: click a highlighted cell, then a tile";
  } else text = `seat ${game.current} to move`;
  $("status").textContent = text;
}

function clickCell(c) {
  if (busy || !game || !game.your_turn || !legalValues(c).length) return;
  if (value !== null && legalValues(c).includes(value)) return send(c * 10 + value - 1);
  cell = c === cell ? null : c;
  value = null;
  drawCells(game);
  drawHand(game);
}

function clickTile(v) {
  if (busy || !game || !game.your_turn) return;
  if (cell !== null && legalValues(cell).includes(v)) return send(cell * 10 + v - 1);
  value = v === value ? null : v;
  cell = null;
  drawCells(game);
  drawHand(game);
}

function send(action) {
  call("POST", "/api/move", { game: game.game, action }, setGame);
}

function showHint(h) {
  const box = $("hintbox");
  box.hidden = false;
  box.innerHTML = "";
  const title = document.createElement("div");
  title.textContent = `hint (${h.agent}): play ${h.move}`;
  title.style.fontWeight = "bold";
  box.appendChild(title);
  const table = document.createElement("table");
  h.moves.forEach((m) => {
    const tr = document.createElement("tr");
    const share = m.share === null ? "" : `${Math.round(m.share * 100)}% of visits, reward ${m.value.toFixed(2)}`;
    [m.move, share, m.points ? m.breakdown : "no minutes"].forEach((t) => {
      const td = document.createElement("td");
      td.textContent = t;
      tr.appendChild(td);
    });
    table.appendChild(tr);
  });
  box.appendChild(table);
  hintCell = h.action < 490 ? Math.floor(h.action / 10) : null;
  drawCells(game);
}

// The review of a finished game: the server analyses one of the person's decisions per
// call (in a worker), so the page asks again until the review is there, showing how far it is.
async function reviewGame() {
  if (busy || !game || !game.over) return;
  busy = true;
  document.body.classList.add("busy");
  $("error").textContent = "";
  const box = $("reviewbox");
  box.hidden = false;
  box.textContent = "reviewing your moves…";
  showStatus();
  try {
    let answer;
    do {
      answer = await api("POST", "/api/review", { game: game.game });
      box.textContent = `reviewing your moves: ${answer.done} / ${answer.total}`;
    } while (answer.review === null);
    showReview(answer.review);
  } catch (err) {
    $("error").textContent = err.message;
    box.hidden = true;
  } finally {
    busy = false;
    document.body.classList.remove("busy");
    showStatus();
  }
}

function line(text, cls) {
  const div = document.createElement("div");
  div.textContent = text;
  if (cls) div.className = cls;
  return div;
}

function showReview(r) {
  const box = $("reviewbox");
  box.innerHTML = "";
  const pct = (share) => `${Math.max(Math.round(100 * share), 1)}%`;
  const total = r.share >= 0.005 ? `about ${pct(r.share)} of a win` : "no measurable share of a win";
  const title = r.moves.length
    ? `review: your ${r.moves.length} costliest move(s) of ${r.decisions}; in all your moves gave away ${total} against the judge's`
    : `review: none of your ${r.decisions} decision(s) gave anything away against the judge: well played`;
  const head = line(title);
  head.style.fontWeight = "bold";
  box.appendChild(head);
  box.appendChild(line(r.judge, "judge"));
  r.moves.forEach((m, k) => {
    const item = document.createElement("div");
    item.className = "review-move";
    const scored = (points, why) => (points ? `+${points}: ${why}` : "no minutes");
    item.appendChild(line(`${k + 1}. move ${m.number}: you played ${m.move} (${scored(m.points, m.breakdown)})`, "played"));
    item.appendChild(line(`the judge plays ${m.better_move} (${scored(m.better_points, m.better_breakdown)}); `
      + `yours gave away about ${pct(m.share)} of a win`, "better"));
    const board = document.createElement("div");
    board.innerHTML = boardSvg(m.board);  // the board before the move, both moves marked
    item.appendChild(board);
    box.appendChild(item);
  });
}

function replayTo(step) {
  if (!game || !game.over) return;
  step = Math.max(0, Math.min(step, game.steps));
  call("GET", `/api/replay?game=${encodeURIComponent(game.game)}&step=${step}`, undefined, (state) => {
    replayStep = step;
    state.saved = game.saved;
    const keep = game;
    draw(Object.assign({}, state, { legal: {}, your_turn: false, can_pass: false, over: true }));
    game = keep;
    $("stepinfo").textContent = `move ${step} / ${state.steps}`;
  });
}

$("new").addEventListener("click", () => call("POST", "/api/new",
  { players: Number($("players").value), team: $("team").checked }, setGame));
$("players").addEventListener("change", teamsOnlyForFour);
$("undo").addEventListener("click", () => call("POST", "/api/undo", { game: game.game }, setGame));
$("hint").addEventListener("click", () => call("POST", "/api/hint", { game: game.game }, showHint));
$("pass").addEventListener("click", () => send(490));
$("review").addEventListener("click", reviewGame);
$("first").addEventListener("click", () => replayTo(0));
$("prev").addEventListener("click", () => replayTo((replayStep === null ? game.steps : replayStep) - 1));
$("next").addEventListener("click", () => replayTo((replayStep === null ? game.steps : replayStep) + 1));
$("last").addEventListener("click", () => replayTo(game.steps));
$("open").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  const text = (await file.text()).trim();
  let record;
  try {
    record = JSON.parse(text.split("\n")[0]);
  } catch (err) {
    $("error").textContent = `not a game record: ${err.message}`;
    return;
  }
  call("POST", "/api/load", { record }, setGame);
});

// The first game. A server that has just started warms its engine up (a first run
// compiles for a minute or more): until then it answers 503 {"warming_up": true, "seconds": N}
// with Retry-After, so the page says so and asks again; a failed warm-up (500,
// "warm_up_failed") is shown and not asked again.
async function start() {
  await whileBusy(async () => {  // no clicks until there is a game
    for (;;) {
      const response = await fetch("/api/state");
      const data = await response.json();
      if (response.ok) {
        setGame(data);
        return;
      }
      if (!data.warming_up) {
        $("status").textContent = data.warm_up_failed ? "the server cannot start a game" : "";
        $("error").textContent = data.error || response.statusText;
        return;
      }
      $("status").textContent = `warming up the engine (first run only) … ${data.seconds} s`;
      const wait = Number(response.headers.get("Retry-After")) || 1;
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    }
  });
}

start();
