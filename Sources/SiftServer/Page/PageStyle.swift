// The page's style sheet (/sift.css).
// Served by StorePage from the binary; it is a Swift string so that nothing
// is read from disk or the network when the page loads.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
enum PageStyle {
    static let text = #"""
/* The page of `sift serve`. */
:root {
  --ink: #1d2733; --muted: #5b6878; --line: #d5dbe3; --wash: #f4f6f9; --accent: #2f6fb3; --accent-wash: #e6eef8;
  --bad: #b3261e; --bad-wash: #fdecea; --good: #1e7a44;
  font: 14px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink);
}
* { box-sizing: border-box; }
body { margin: 0; background: #fff; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
pre, code, input.predicate, .uuid, .key { font-family: "SFMono-Regular", Menlo, "DejaVu Sans Mono", monospace; font-size: 13px; }
button, select, input { font: inherit; }
button { border: 1px solid var(--line); background: #fff; border-radius: 5px; padding: 4px 10px; cursor: pointer; color: var(--ink); }
button:hover:not([disabled]) { border-color: var(--accent); color: var(--accent); }
button[disabled] { opacity: .45; cursor: default; }
button.danger { color: var(--bad); }
[hidden], .hidden { display: none !important; }

.top { display: flex; gap: 14px; align-items: baseline; padding: 10px 18px; border-bottom: 1px solid var(--line); background: var(--wash); }
.top .brand { font-weight: 700; font-size: 17px; color: var(--ink); }
.top .store { color: var(--muted); font-family: monospace; font-size: 12px; max-width: 40vw; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.top .mode { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: var(--accent-wash); color: var(--accent); }
.top .mode.read-write { background: #fff4e0; color: #8a5300; }
.top .status { margin-left: auto; color: var(--muted); font-size: 12px; }
.top .status.error { color: var(--bad); }

.layout { display: grid; grid-template-columns: 210px 1fr; min-height: calc(100vh - 44px); }
.sidebar { border-right: 1px solid var(--line); padding: 8px 14px; background: #fbfcfd; }
.sidebar h2 { font-size: 11px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 14px 0 6px; }
.sidebar ul { list-style: none; margin: 0; padding: 0; }
.sidebar ul ul { padding-left: 14px; border-left: 1px dotted var(--line); margin-left: 4px; }
.sidebar li { padding: 2px 0; }
.sidebar a.current { font-weight: 700; color: var(--ink); }
.sidebar .count { float: right; color: var(--muted); font-variant-numeric: tabular-nums; font-size: 12px; }
.sidebar .abstract > a { font-style: italic; }

.main { padding: 14px 18px 40px; min-width: 0; }
h1 { font-size: 20px; margin: 4px 0 12px; }
h1 .note, h1 .version { font-weight: 400; color: var(--muted); font-size: 14px; }
h2 { font-size: 15px; margin: 16px 0 8px; }
h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 12px 0 4px; }

.query { margin-bottom: 10px; }
.predicate-box { position: relative; }
input.predicate { width: 100%; padding: 8px 10px; border: 1px solid var(--line); border-radius: 6px; }
input.predicate:focus { outline: 2px solid var(--accent-wash); border-color: var(--accent); }
input.predicate.invalid { border-color: var(--bad); background: var(--bad-wash); }
.completions { position: absolute; z-index: 5; left: 0; top: 100%; min-width: 280px; list-style: none; margin: 2px 0 0; padding: 4px 0;
  background: #fff; border: 1px solid var(--line); border-radius: 6px; box-shadow: 0 4px 14px rgba(0,0,0,.1); }
.completions li { display: flex; justify-content: space-between; gap: 16px; padding: 3px 10px; cursor: pointer; }
.completions li.selected, .completions li:hover { background: var(--accent-wash); }
.completions .kind { color: var(--muted); font-size: 12px; }
.diagnostic { margin: 6px 0 0; padding: 8px 10px; background: var(--bad-wash); color: var(--bad); border-radius: 6px; white-space: pre-wrap; }
.suggestion { margin-top: 6px; }
.summary { display: flex; flex-wrap: wrap; align-items: center; gap: 10px; margin-top: 10px; }
.result-count { font-weight: 600; margin-right: auto; }
.actions { display: flex; flex-wrap: wrap; gap: 6px; margin: 10px 0; }
.scope { color: var(--muted); margin: -6px 0 10px; }

/* The table fits a 1400 px window: long values are cut with an ellipsis (their cell's title holds them whole),
   and a table wider still scrolls inside its wrapper, never the page. */
.table-wrap { overflow-x: auto; max-width: 100%; border: 1px solid var(--line); border-radius: 6px; }
.table-wrap.stale { opacity: .55; }
table.results { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
table.results th, table.results td { text-align: left; padding: 4px 7px; border-bottom: 1px solid var(--line); white-space: nowrap; vertical-align: top; }
table.results td > .cell { max-width: 11em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
table.results td > .cell.whole { max-width: none; }
table.results thead th { background: var(--wash); font-weight: 600; position: sticky; top: 0; }
table.results th.sortable { cursor: pointer; }
table.results th.sortable:hover { color: var(--accent); }
table.results th.relationship { color: var(--muted); font-style: italic; }
table.results tbody tr:hover { background: #fafbfd; }
table.results td.none { color: var(--muted); text-align: center; padding: 18px; }
.subentity { color: var(--muted); font-size: 12px; }
.nil { color: #9aa5b1; font-style: italic; }
.empty { color: #9aa5b1; }
.number, .date { font-variant-numeric: tabular-nums; }
.boolean { color: #6a3fb3; }
.binary { color: var(--muted); }
.structured { font-size: 12px; }

.pager { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 12px; margin-top: 10px; }
.page-number { color: var(--muted); }
.page-form { display: inline-flex; gap: 6px; align-items: center; margin-left: 8px; color: var(--muted); }
.page-form input.page-jump { width: 6em; padding: 3px 6px; border: 1px solid var(--line); border-radius: 5px; }

.view-controls { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin-top: 8px; }
details.columns { position: relative; }
details.columns > summary { cursor: pointer; list-style: none; border: 1px solid var(--line); border-radius: 5px; padding: 4px 10px; background: #fff; }
details.columns > summary::-webkit-details-marker { display: none; }
details.columns > summary::after { content: " ▾"; color: var(--muted); }
details.columns[open] > summary { border-color: var(--accent); color: var(--accent); }
.column-list { position: absolute; z-index: 6; left: 0; top: 100%; margin-top: 2px; min-width: 220px; max-height: 360px; overflow: auto;
  background: #fff; border: 1px solid var(--line); border-radius: 6px; box-shadow: 0 4px 14px rgba(0,0,0,.1); padding: 6px 12px; }
.column-list label { display: block; padding: 2px 0; white-space: nowrap; }
.column-actions { border-top: 1px solid var(--line); margin-top: 6px; padding-top: 6px; }
.facet-choice select { padding: 3px 6px; border: 1px solid var(--line); border-radius: 5px; background: #fff; }
.facets { margin: 0 0 12px; border: 1px solid var(--line); border-radius: 6px; padding: 2px 12px 10px; background: #fcfdfe; }
.facets.loading { opacity: .6; }
.facets h3 { margin: 8px 0 6px; }
ul.facet-values { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 6px; }
.facet-value { display: inline-flex; gap: 8px; align-items: baseline; max-width: 22em; }
.facet-value .facet-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.facet-value .facet-count { color: var(--muted); font-size: 12px; font-variant-numeric: tabular-nums; }

.panel:empty { display: none; }
.panel { margin: 10px 0 14px; border: 1px solid var(--line); border-radius: 6px; padding: 4px 14px 12px; background: #fcfdfe; }
.panel-head { display: flex; justify-content: space-between; align-items: center; }
.explain pre { background: var(--wash); padding: 8px 10px; border-radius: 5px; white-space: pre-wrap; margin: 0; }
.group-form { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 6px 0 10px; }
.group-form input { padding: 4px 8px; border: 1px solid var(--line); border-radius: 5px; min-width: 220px; }
svg.chart { display: block; max-width: 100%; height: auto; margin-bottom: 10px; }
svg.chart rect { fill: var(--accent); }
svg.chart text { font-size: 12px; fill: var(--ink); }
svg.chart text.value { fill: var(--muted); }

.object table.properties { border-collapse: collapse; min-width: 420px; }
.object table.properties th { text-align: left; padding: 4px 16px 4px 0; color: var(--muted); font-weight: 500; vertical-align: top; }
.object table.properties td { padding: 4px 0; }
.editor { display: inline-flex; gap: 8px; align-items: center; }
.editor input[type=text] { padding: 3px 6px; border: 1px solid var(--line); border-radius: 4px; min-width: 260px; }
.nil-box { color: var(--muted); font-size: 12px; }
.message { color: var(--good); margin: 6px 0; }
.conflict { border: 1px solid var(--bad); background: var(--bad-wash); border-radius: 6px; padding: 4px 14px 10px; margin-top: 10px; }
.conflict td.mine { color: var(--accent); }
.conflict td.theirs { color: var(--bad); }
.failure { border: 1px solid var(--bad); background: var(--bad-wash); color: var(--bad); border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
.token-form { padding: 10px 18px; background: #fff4e0; }

.diagram-wrap { overflow: auto; }
svg.diagram { display: block; }
svg.diagram .entity rect { fill: #fff; stroke: var(--accent); stroke-width: 1.2; }
svg.diagram .entity.abstract rect { stroke-dasharray: 4 3; }
svg.diagram .entity { cursor: pointer; }
svg.diagram .entity:hover rect { fill: var(--accent-wash); }
svg.diagram text { font-size: 12px; fill: var(--ink); }
svg.diagram text.title { font-weight: 700; }
svg.diagram .link { stroke: #8b99a8; stroke-width: 1.2; fill: none; }
svg.diagram .inherits { stroke: var(--accent); stroke-dasharray: 5 4; }
svg.diagram .link-label { fill: var(--muted); font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 4px; stroke-linejoin: round; }
.history ul.changes { margin: 0; padding-left: 16px; white-space: normal; }
.history li.insert { color: var(--good); }
.history li.delete { color: var(--bad); }
.notice { border: 1px solid #e0b252; background: #fff8e6; border-radius: 6px; padding: 6px 12px; margin: 8px 0; }
"""#
}
#endif
