"""The optimal-transport stability criterion: how large a shift does it take to break a model?

=================  ==========================================================
criterion          R(β, r) by its one-dimensional dual; curves; most
                   sensitive distribution; transport costs
rewrites           the candidate perturbations (rule-based question rewrites)
grader             the 0/1 loss: does an answer contain an accepted answer?
data               questions, recorded answers, losses and costs
=================  ==========================================================
"""
