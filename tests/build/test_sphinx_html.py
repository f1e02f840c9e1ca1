from docutils import nodes
from docutils.utils import new_document

from feature_learning.build.sphinx_html import _alt_text_from_captions, _remove_injected_parameters


def _doc():
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    return new_document("test", get_default_settings(Parser))


def test_the_injected_parameters_cell_is_removed_and_the_chapters_own_stays():
    doc = _doc()
    doc += nodes.container(classes=["cell", "tag_parameters"])
    doc += nodes.container(classes=["cell", "tag_injected-parameters"])
    _remove_injected_parameters(None, doc)
    assert [c["classes"] for c in doc.findall(nodes.container)] == [["cell", "tag_parameters"]]


def test_a_figures_image_takes_its_caption_as_alt_text():
    doc = _doc()
    figure = nodes.figure()
    figure += nodes.image(uri="_build/x.png", alt="_build/x.png")
    figure += nodes.caption(text="Figure 8.1 reproduced:\n error against loops.")
    kept = nodes.figure()
    kept += nodes.image(uri="y.png", alt="a chosen description")
    kept += nodes.caption(text="ignored")
    doc += [figure, kept]
    _alt_text_from_captions(None, doc, "page")
    assert [i["alt"] for i in doc.findall(nodes.image)] == ["Figure 8.1 reproduced: error against loops.",
                                                           "a chosen description"]


def test_alt_text_reads_a_captions_math_as_plain_text():
    from feature_learning.build.sphinx_html import tex_to_text

    doc = _doc()
    figure = nodes.figure()
    figure += nodes.image(uri="x.png", alt="x.png")
    caption = nodes.caption()
    caption += [nodes.Text("Figure 2 for "), nodes.math(text=r"\alpha=\pi/2"), nodes.Text(": "),
                nodes.math(text=r"\mathbb E_{\mathbf x|y}\langle\mathbf w_k,\mathbf x\rangle"), nodes.Text(".")]
    figure += caption
    doc += figure
    _alt_text_from_captions(None, doc, "page")
    assert next(doc.findall(nodes.image))["alt"] == "Figure 2 for α=π/2: E_x|y⟨w_k,x⟩."
    assert tex_to_text(r"\|v_k\|\,\left(a\right)") == "|v_k| (a)" and tex_to_text(r"\sqrt{2}") == "sqrt 2"
