"""The book's build: the Sphinx extensions (:mod:`book_build.ext`, :mod:`book_build.speed`), the site's output
renderers and web export, and the tools that keep the pages, notebooks, PDFs, slides and
handout in step. Never installed in a reader's kernel.

Imports go one way: ``book_build`` -> ``transformer_classroom`` -> ``transformer_lessons``.
"""
