"""An instruction's reference page as one self-contained HTML file (same content as the text)."""

from __future__ import annotations

from html import escape

from hydroplane.isa.page import UNASSIGNED, Page

STYLE = """body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}
table.layout{border-collapse:collapse;text-align:center}
table.layout td{border:1px solid #888;padding:.3em .6em;font-family:monospace}
table.layout td.unassigned{background:#eee;color:#777;font-style:italic}
table.layout tr.bits td{border-top:none;font-size:.8em;color:#555}
code,pre{background:#f4f4f4;padding:.1em .3em}"""


def render_html(page: Page) -> str:
    e = escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(page.name)} — AMD ISA</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<p>GPU Native ISA · AMD · {e(page.title_word)}</p>",
             f"<p>{e(page.group_title)}</p><h1>{e(page.name)}</h1><p>{e(page.description)}</p>",
             "<h2>Encoding</h2>", f"<h3>Binary Layout ({e(page.architecture)})</h3>"]
    if page.cells:
        names = "".join(f"<td class='{'unassigned' if c.text == UNASSIGNED else 'field'}'>{e(c.text)}</td>"
                        for c in page.cells)
        bits = "".join(f"<td>{e(c.bits)}</td>" for c in page.cells)
        parts.append(f"<table class='layout'><tr>{names}</tr><tr class='bits'>{bits}</tr></table>")
    parts.append(f"<p>{e(page.layout_note)}</p><dl><dt>Format</dt><dd>{e(page.format_name)}</dd>"
                 f"<dt>Width</dt><dd>{f'{page.width} bits' if page.width else 'unknown'}</dd>"
                 f"<dt>Opcode</dt><dd>{page.opcode}</dd>")
    if page.identifier is not None:
        parts.append(f"<dt>Identifier</dt><dd>0x{page.identifier:0{page.width // 4}X}</dd>")
    parts.append("</dl><h3>All encodings</h3><ul>")
    parts += [f"<li>{e(f.encoding)}: opcode {f.opcode}, {f'{f.bits} bits' if f.bits else 'width unknown'}, "
              f"{e(f.layout)}</li>" for f in page.forms]
    parts.append("</ul><h2>Operands</h2><ul>")
    for o in page.operands:
        field = (f"<br>Field {e(o.name)}: bits {e(o.field_bits)} ({o.field_width} bits); operand size {o.size} bits."
                 if o.field_bits else "")
        parts.append(f"<li><b>{e(o.name)}</b><br>{e(o.access)}. {e(o.type_description)} Data format: "
                     f"{e(o.format_description)} ({e(o.operand_type)}, {e(o.data_format)}){field}</li>")
    parts.append(f"</ul><p>In AMD's order, as its machine-readable ISA specification lists them for the "
                 f"{e(page.encoding)} encoding ({e(page.architecture)}).</p>")
    parts.append("<h2>GFX Target Compatibility</h2><table><tr><th>Target</th><th>Support</th></tr>")
    parts += [f"<tr><td>{e(t)}</td><td>{e(s)}</td></tr>" for t, s in page.targets]
    parts.append(f"</table><h2>Related</h2><p>More in {e(page.group_title)}</p><ul>")
    parts += [f"<li>{e(r)}</li>" for r in page.related]
    parts.append(f"</ul><h2>Reference</h2><p>AMDGPU / GFX ISA</p><h2>Description</h2><p>{e(page.description)}</p>")
    if page.table:
        rows = "".join(f"<tr><td>{e(b)}</td><td>{e(v)}</td></tr>" for b, v in page.table)
        parts.append(f"<p>Lookup table on S0[{page.table_bits - 1}:0]:</p>"
                     f"<table><tr><th>S0 binary</th><th>Result</th></tr>{rows}</table>")
    if page.semantics:
        parts.append(f"<h2>Semantics</h2><pre>{e(page.semantics)}</pre>")
    if page.example:
        parts.append(f"<h2>Example</h2><pre>{e(page.example)}</pre><p>Encoded from the XML layout: "
                     f"<code>{page.example_bytes.hex(' ')}</code></p><p>{e(page.example_check)}</p>")
    parts.append("<h2>Sources</h2><ul>" + "".join(f"<li>{e(s)}</li>" for s in page.sources) + "</ul>")
    return "".join(parts) + "</body></html>\n"
