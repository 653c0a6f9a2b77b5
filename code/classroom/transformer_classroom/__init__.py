"""The classroom: grade submissions in an OS sandbox (:mod:`.grade`, :mod:`.sandbox`),
write a Gradescope autograder (:mod:`.gradescope`), give each student a variant
(:mod:`.variants`), export the quizzes to learning-management systems (:mod:`.lms`), and
read the book's structure (:mod:`.book`, :mod:`.quiz_blocks`).

It imports :mod:`transformer_lessons` (the checks the grader runs); the learner's package
never imports it.
"""
