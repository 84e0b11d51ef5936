//! The `/docs` page.

/// The `/docs` page: the description embedded, listed by a small inline
/// script (operations, their parameters, bodies and answers), plus the
/// raw JSON, so it is useful with no network at all.
pub(super) const DOCS_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>deepfleet API</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; }
details { border: 1px solid #ddd; border-radius: 4px; margin: .4rem 0; padding: .3rem .6rem; }
summary { cursor: pointer; }
.method { display: inline-block; width: 4.5rem; font-weight: bold; text-transform: uppercase; }
code, pre { font-family: ui-monospace, monospace; }
pre { background: #f6f6f6; overflow: auto; padding: .5rem; }
</style>
</head>
<body>
<h1>deepfleet API</h1>
<p>The machine-readable description is at <a href="/openapi.json">/openapi.json</a>.</p>
<div id="operations"></div>
<details><summary>The whole description</summary><pre id="raw"></pre></details>
<script id="description" type="application/json">__DESCRIPTION__</script>
<script>
pub(super) const doc = JSON.parse(document.getElementById("description").textContent);
document.getElementById("raw").textContent = JSON.stringify(doc, null, 2);
pub(super) const root = document.getElementById("operations");
pub(super) const text = (tag, content) => { const e = document.createElement(tag); e.textContent = content; return e; };
for (const [path, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    const box = document.createElement("details");
    const head = document.createElement("summary");
    head.append(text("span", method), " ", text("code", path), " — ", op.summary || "");
    head.firstChild.className = "method";
    box.append(head);
    if (op.parameters && op.parameters.length) {
      box.append(text("h4", "Parameters"));
      box.append(text("pre", JSON.stringify(op.parameters, null, 2)));
    }
    if (op.requestBody) {
      box.append(text("h4", "Body"));
      box.append(text("pre", JSON.stringify(op.requestBody.content, null, 2)));
    }
    box.append(text("h4", "Answers"));
    box.append(text("pre", JSON.stringify(op.responses, null, 2)));
    root.append(box);
  }
}
</script>
<noscript><p>Without scripts, read <a href="/openapi.json">/openapi.json</a>.</p></noscript>
</body>
</html>
"#;

/// JSON that can sit inside a `<script>` element: `<` never appears raw,
/// so no `</script>` closes it early.
pub(super) fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}
