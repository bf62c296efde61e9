"""The course's multiple-choice questions, one bank per notebook (01 to 08).

Written from the course's learning goals and its interview drill. Each
question has exactly one right answer, and every option carries feedback:
the right one says why it is right, each wrong one says why it is wrong.
Facts the answers state about today's PyTorch (fused function on a fully
masked row, float16 fills, default scale) are measured in tests/test_quiz.py.

Kept as Python data, not JSON files, so an installed package carries it.
``QUIZZES[nn]`` is a list of questions in jupyterquiz's format:
``{"question", "type": "multiple_choice", "answers": [{"answer", "correct", "feedback"}]}``.
Text may use `backticks` for code; it is HTML-escaped when built.
"""

from __future__ import annotations

import html
import re

__all__ = ["QUIZZES", "RIGHT", "WRONG"]

RIGHT, WRONG = "Right.", "Not quite."


def _markup(text: str) -> str:
    """Escape HTML, then turn `code` into <code>code</code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def _mc(question, *answers):
    """``answers``: (text, is_correct, why). Feedback starts with 'Right.' or 'Not quite.'
    so the verdict never depends on colour alone."""
    return {
        "question": _markup(question),
        "type": "multiple_choice",
        "answers": [
            {"answer": _markup(text), "correct": bool(ok),
             "feedback": _markup(f"{RIGHT if ok else WRONG} {why}")}
            for text, ok, why in answers
        ],
    }


QUIZZES = {
    "01": [
        _mc("In the soft-lookup picture of attention, what is a key for?",
            ("It says what the position contributes to the output when it is attended to.", False,
             "That is the value. A key is only ever compared with queries; it never reaches the output."),
            ("It advertises what its entry holds, so that queries can be compared with it.", True,
             "Each query is scored against every key; the values are what those scores then blend."),
            ("It says what the position is looking for.", False,
             "That is the query: the side doing the asking."),
            ("It records the position's index so attention knows the word order.", False,
             "Attention has no built-in notion of order; keys are learned from content, and position "
             "information has to be added separately.")),
        _mc("An ordinary dictionary returns exactly one value for a key. What does attention return for "
            "one query?",
            ("The single value whose key matches the query best, as in a dictionary.", False,
             "That would be a hard lookup. Attention only comes close to it when one score dwarfs the "
             "rest (a very low temperature); normally it blends."),
            ("The key that matches the query best, so you can look its value up afterwards.", False,
             "Keys are only used for matching; the answer is made of values."),
            ("A weighted average of all the values, weighted by each key's match.", True,
             "Nothing is picked; everything is mixed in proportion to relevance, and the weights sum to 1."),
            ("The plain sum of all the values, the same for every query.", False,
             "The values are weighted by the match, and the weights sum to 1, so it is an average that "
             "favours good matches, not a sum.")),
        _mc("Over 32 positions, the gradient reaching the first input shrank by more than a factor of "
            "a million through the RNN, but through attention it only fell like 1/n (the weight spread over "
            "n positions). Why?",
            ("The RNN has fewer parameters, so it has less gradient to hand back.", False,
             "It does have fewer here (two d × d matrices to attention's three), but the size of the "
             "gradient depends on the path it travels, not on how many parameters there are."),
            ("The slope of tanh is above 1, so the RNN's gradient explodes and has to be clipped.", False,
             "The slope of tanh is never above 1 (the notebook checks it), and here the gradient shrinks."),
            ("Each RNN step it passes back through shrinks it; attention reaches the first input in one "
             "step.", True,
             "A chain of 31 shrinking factors multiplies out to almost nothing. Attention's path has "
             "length one; it only shares its weight among n positions."),
            ("Attention ran on more threads, so its gradient came out more accurately.", False,
             "The notebook ran on one thread. The difference is the length of the path, not the hardware.")),
        _mc("Before the softmax you divide every score by a temperature of 0.2 instead of 1. What happens "
            "to a query's weights?",
            ("They get sharper: the best key takes more of the weight.", True,
             "Dividing by a number below 1 spreads the scores apart, and the softmax exaggerates gaps."),
            ("They get flatter, closer to a plain average over the keys.", False,
             "That is what a temperature above 1 does."),
            ("A different key becomes the best match, since the scores change.", False,
             "Dividing by a positive number keeps the order of the scores; only the gaps change."),
            ("They stop summing to 1, because the scores were rescaled.", False,
             "The softmax makes every row sum to 1 whatever the scores are.")),
    ],
    "02": [
        _mc("Which order of steps is scaled dot-product attention?",
            ("scores = q·kᵀ, softmax, divide by √d_k, mask, multiply by v", False,
             "Scaling or masking after the softmax leaves rows that no longer sum to 1, and the softmax "
             "has already seen the unscaled scores."),
            ("scores = q·kᵀ, mask, softmax, multiply by v, divide the output by √d_k", False,
             "Dividing the output only shrinks it; the softmax still saw unscaled scores and may be "
             "saturated."),
            ("scores = q·kᵀ, divide by √d_k, mask, softmax over the keys, multiply by v", True,
             "Compare, scale, mask, softmax, blend: the six lines' steps after the projection, in "
             "this order."),
            ("scores = k·qᵀ, divide by √d_k, mask, softmax over the last axis, multiply by v", False,
             "k·qᵀ has one row per key, not per query: it raises when n_q differs from n_k, and when they "
             "are equal it runs, but each row is one key's softmax over the queries: no query's blend.")),
        _mc("q has shape (n_q, d_k), k is (n_k, d_k) and v is (n_k, d_v). What are the shapes of the "
            "weights and of the output?",
            ("weights (n_q, n_k), output (n_q, d_v)", True,
             "One row of weights per query, one weight per key; each output row is a blend of values, "
             "so it has the values' width."),
            ("weights (n_k, n_q), output (n_k, d_v)", False,
             "That is one row per key. Each query needs its own row of weights and its own output."),
            ("weights (n_q, n_k), output (n_q, d_k)", False,
             "The output is made of values, so it has their width d_v; d_k only matters for matching."),
            ("weights (n_q, d_k), output (n_q, d_v)", False,
             "The feature dimension d_k is summed away by the dot product; weights have one entry per key.")),
        _mc("Over which axis of the (n_q, n_k) score matrix is the softmax taken?",
            ("Over the queries (dim=-2), so each key's column sums to 1.", False,
             "Then a query's weights no longer sum to 1 and its output is not an average of the values."),
            ("Over the keys (dim=-1), so each query's row sums to 1.", True,
             "Each query shares out one unit of attention among the keys."),
            ("Over all entries at once, so the whole matrix sums to 1.", False,
             "Then every query gets only a small slice of one shared budget."),
            ("Over the feature dimension d_k.", False,
             "The scores have no feature dimension left; the dot product summed it away.")),
        _mc("Row i, column j of the attention weights holds 0.7. What does that say?",
            ("Value i is 70% similar to value j.", False,
             "Values are never compared with each other; queries are compared with keys."),
            ("Position j will come after position i with probability 0.7.", False,
             "Attention weights are not predictions about order; they are shares of a blend."),
            ("Query j takes 70% of its output from value i.", False,
             "Rows are queries and columns are keys, not the other way round."),
            ("Query i takes 70% of its output from value j.", True,
             "Row i is query i's blend; entry j is value j's share in it.")),
    ],
    "03": [
        _mc("Why are the scores divided by √d_k?",
            ("To keep the numbers small, so that nothing overflows in float16 or float32 when the "
             "dot products grow.", False,
             "Smaller numbers are a side effect, not the reason, and the softmax is computed stably "
             "anyway. Without the division the rows start saturated and pass back little gradient; "
             "on notebook 03's task the model then took several times the steps to learn."),
            ("The dot products' variance grows with d_k; the softmax then saturates and its gradient "
             "nearly vanishes. √d_k restores variance 1.", True,
             "Variance argument plus gradient argument: with the division the spread is 1 at every "
             "d_k, so the rows start soft and pass gradient."),
            ("So that each row of weights sums to 1, as a probability distribution must, whatever "
             "the size of d_k.", False,
             "The softmax does that by itself, at any scale."),
            ("It is a convention from the original paper; any fixed constant, such as 10, would work "
             "as well.", False,
             "The right constant depends on d_k: with a fixed one, saturation comes back as d_k grows.")),
        _mc("The entries of q and k are independent, with mean 0 and variance 1, and d_k = 64. What is "
            "the standard deviation of q·k?",
            ("64", False, "That is the variance: the sum of 64 terms of variance 1."),
            ("8", True, "The variance is d_k = 64, so the standard deviation is √64 = 8."),
            ("1", False, "That is the spread after dividing by √d_k."),
            ("0", False, "That is the mean.")),
        _mc("One weight in a row is 0.999 and the rest are nearly 0. What does that do to the gradient "
            "flowing back into that row's scores?",
            ("It is almost zero, so almost no learning signal reaches the scores.", True,
             "The softmax's Jacobian is diag(p) − p pᵀ; with one p near 1 and the others near 0, "
             "every entry is near 0."),
            ("It becomes very large, so training turns unstable.", False,
             "A saturated softmax starves the gradient rather than blowing it up."),
            ("It is unchanged; only the forward values are affected.", False,
             "The softmax's derivative depends on the weights themselves, so it changes with them."),
            ("It becomes NaN.", False,
             "Saturation gives tiny but finite gradients; NaN comes from masking mistakes.")),
        _mc("Multi-head attention with d_model = 512 and 8 heads: what should each head's scores be "
            "divided by?",
            ("√512 ≈ 22.6", False,
             "That divides by √d_model. A head's dot products run over its own 64 features, so their "
             "spread is √64; dividing by √512 leaves a spread of 1/√8 ≈ 0.35, set by the number of heads, "
             "and the weights start nearly flat."),
            ("64", False, "That divides by d_k instead of √d_k, which flattens the weights."),
            ("√64 = 8", True, "Each head works in d_k = 512 / 8 = 64 features, so it divides by √64."),
            ("Nothing: the heads are small enough not to need it.", False,
             "64-long dot products still have a spread of 8, enough to saturate the softmax.")),
    ],
    "04": [
        _mc("What do the two kinds of mask prevent?",
            ("Padding: attending to filler that is not data. Causal: attending to later positions.", True,
             "Padding keeps batch filler out of the blend; causal stops a position reading what it is "
             "meant to predict."),
            ("Padding: attending to later positions. Causal: attending to filler that is not data.", False,
             "Swapped."),
            ("Both block filler; the causal mask also stops a position attending to itself.", False,
             "A position may attend to itself and everything before it; blocking the diagonal is a bug "
             "(and leaves the first position with nothing at all)."),
            ("Padding masks hide padded queries (rows), so padding produces no output.", False,
             "A padding mask blocks key columns: real tokens must not take anything from padding. "
             "Blocking rows instead lets padding leak in.")),
        _mc("Where, and how, is a mask applied?",
            ("After the softmax: multiply the weights by a 0/1 mask, so blocked weights are 0.", False,
             "That is a different operation: the rows no longer sum to 1."),
            ("Before the softmax: set the blocked scores to 0, so they contribute nothing.", False,
             "0 is an ordinary score, so blocked keys still get a fair share of the weight."),
            ("Before the softmax: set the blocked scores to −inf (or a very negative number).", True,
             "exp(−inf) = 0, so blocked keys get exactly zero weight and the rows still sum to 1."),
            ("After the softmax: zero the values at the blocked positions before mixing.", False,
             "The blocked keys still take their share of weight; it just buys zeros, so the output "
             "shrinks.")),
        _mc("A query row in which every key is blocked is filled with −inf. What comes out?",
            ("NaN from a plain softmax (0/0); zeros from PyTorch's fused function.", True,
             "Measured on the installed PyTorch in notebook 04 (another version may differ); a "
             "torch.finfo(...).min fill gives a uniform blend instead."),
            ("Zeros, from a plain softmax and from the fused function alike.", False,
             "A plain softmax divides exp(−inf) = 0 by a sum of zeros: 0/0 = NaN."),
            ("A uniform blend of all the values, since every score is equal.", False,
             "That is what a large finite fill such as torch.finfo(dtype).min gives, not −inf."),
            ("PyTorch raises an error that names the fully masked row.", False,
             "No error: the NaN appears silently and spreads through later layers.")),
        _mc("Your scores are float16 and you call scores.masked_fill(~mask, -1e9). What happens with "
            "today's PyTorch?",
            ("It works: -1e9 is stored exactly, and blocked keys get weight 0.", False,
             "float16 cannot hold -1e9; its most negative finite value is -65504."),
            ("It raises a RuntimeError: -1e9 does not fit in float16.", True,
             "Measured on the installed PyTorch in notebook 04: a natural guess is that it silently "
             "becomes −inf, but masked_fill refuses it. Use torch.finfo(scores.dtype).min."),
            ("It is silently clamped to -65504, float16's most negative value.", False,
             "masked_fill does not clamp: it refuses a fill that overflows (torch.where, notebook 04 "
             "showed, silently writes -inf instead)."),
            ("It is silently rounded to 0, so the mask does nothing.", False,
             "A value too large in magnitude is never rounded to 0.")),
        _mc("A model trained with no causal mask reaches a training loss near 0, but falls apart "
            "when it writes text one token at a time. Why?",
            ("It could read the tokens it had to predict.", True,
             "Training leaked the answers: each position read the next token. When it writes text, "
             "the next token does not exist yet."),
            ("Without a mask the model has fewer parameters, so it is too small.", False,
             "A mask changes what is visible, not the number of parameters."),
            ("Generation uses a different softmax from training.", False,
             "Generation runs the same attention, one position at a time."),
            ("The loss was computed on padding tokens.", False,
             "Padding in the loss is a separate bug; it does not let a position read the token it "
             "has to predict.")),
    ],
    "05": [
        _mc("What does multi-head attention buy over one head of the same total width?",
            ("Several different attention patterns at once, one per head.", True,
             "Each head has its own softmax, so each can put its weight on a different place. Above, "
             "one head of the same width had one softmax per query for two places, and did worse on "
             "each of the notebook's three seeds within the same 150 training steps."),
            ("More compute and more parameters, like a layer of several times the width.", False,
             "The total width is the same; the cost is nearly the same."),
            ("Less noise, because the heads' outputs are averaged together.", False,
             "Heads are not averaged: they are concatenated and projected."),
            ("Each head looks at its own stretch of the sequence.", False,
             "Every head sees every position; heads differ in which features they compare.")),
        _mc("Why are heads nearly free?",
            ("All heads use the same rows of W_q, W_k and W_v, so one head's work serves them all.", False,
             "Each head has its own slice of W_q, W_k and W_v, so the heads compute different patterns; "
             "together the slices are one d_model x d_model matrix, which is why heads add no parameters."),
            ("Each head works in d_model / n_heads features: together they cost about one full head.", True,
             "The width is split, not multiplied."),
            ("Only the most confident head is run at inference time.", False, "All heads run, every time."),
            ("The heads skip the softmax, which is the expensive part.", False,
             "Every head runs a full attention, softmax included.")),
        _mc("How are the heads' outputs combined?",
            ("Averaged over the heads, then projected by W_o.", False,
             "Averaging throws away what makes them different. Heads are not averaged."),
            ("Concatenated along the features, then projected by W_o.", True,
             "Concatenate back to d_model features, then one linear layer mixes them."),
            ("Summed over the heads, with no projection afterwards.", False,
             "Without W_o nothing mixes information across heads."),
            ("Only the head with the highest score is kept for each position.", False,
             "All heads contribute.")),
        _mc("After `x.view(batch, n, n_heads, d_k)`, why the `.transpose(1, 2)`?",
            ("To make the tensor contiguous in memory before the matmul.", False,
             "The transpose makes it non-contiguous; that is why merging needs .contiguous() before "
             ".view()."),
            ("It is optional: `x.view(batch, n_heads, n, d_k)` gives the same tensor.", False,
             "It does not: that view cuts the features so each 'head' spans pieces of several "
             "positions."),
            ("To swap the roles of queries and keys inside each head.", False,
             "Queries and keys are separate tensors."),
            ("To get (batch, n_heads, n, d_k): in each head, one row per position.", True,
             "Then q @ k.transpose(-2, -1) is (batch, n_heads, n, n): one batched matmul gives every head "
             "its score matrix, each row a position. Without the transpose the rows mix positions "
             "(section 2).")),
        _mc("What is different about torch.nn.MultiheadAttention compared with the module you wrote?",
            ("Nothing: it is a drop-in replacement with the same arguments.", False,
             "It is not: layout and mask conventions differ."),
            ("It is sequence-first by default, and its bool masks mean True = ignore.", True,
             "Ours (and F.scaled_dot_product_attention) use True = may attend; cross over with ~mask."),
            ("It uses no output projection, so its output is the raw heads.", False, "It has one: out_proj."),
            ("It only supports one head, so it cannot be split.", False, "It takes num_heads like ours.")),
    ],
    "06": [
        _mc("In section 6, the healthy runs and the runs whose scores start 64 times too large both end "
            "with attention entropy below 0.1 nats. What set the saturated runs apart?",
            ("Their entropy ended far above the healthy runs', near the uniform line.", False,
             "Both ended below 0.1 nats, far below the uniform line: at the end, the entropy alone cannot "
             "tell them apart."),
            ("Their entropy was already near 0 at step 1, before anything was learned.", True,
             "Below 0.2 nats at the first step: each row sat on whichever key the random start favoured. "
             "Their heads stayed sharp with much of their weight off the previous token, and their loss "
             "stayed above 1 while the healthy runs' fell below 0.01."),
            ("Their entropy stayed on the uniform line all through training.", False,
             "That would be a head that never sharpens; the saturated heads were sharp from the first "
             "step."),
            ("Nothing: both heads ended sharp, so both had learned the task.", False,
             "Sharp is not right: the saturated heads put much of their weight off the previous token, "
             "and their loss stayed above 1.")),
        _mc("KV cache for 32 layers, 32 heads of width 128, in float16: how many bytes per token?",
            ("256 KiB", False, "That forgets the factor 2: every position stores a key AND a value."),
            ("1 MiB", False, "float16 takes 2 bytes per number, not 4."),
            ("512 KiB", True, "2 × 32 × 32 × 128 × 2 bytes = 524,288 bytes = 512 KiB."),
            ("128 KiB", False, "Count the keys and the values, and 2 bytes each.")),
        _mc("What does PyTorch's fused F.scaled_dot_product_attention save?",
            ("It approximates attention by skipping keys with tiny weights.", False,
             "It is exact (up to rounding); skipping keys is what sparse or sliding-window attention do."),
            ("It makes attention O(n) in time instead of O(n²).", False,
             "It still does about n² multiply-adds; what it avoids is storing the n × n matrix."),
            ("When it picks a fused kernel, the kernel itself never stores the n × n scores.", True,
             "Same result as section 1's explicit three lines, without storing the scores. Section 4 "
             "measured what can still cost n × n on this CPU: a bool mask keeps the flash kernel but is "
             "first turned into an n × n float mask (1.20 matrices at the peak); dropout, 3-D inputs and "
             "values of another head size leave the flash kernel (is_causal=True, in place of a mask, "
             "keeps the flash kernel and makes no n × n matrix)."),
            ("It drops the √d_k scaling, which is not needed at scale.", False,
             "Its default scale is 1/√E with E = q.size(-1), the same √d_k.")),
        _mc("Which two structural costs does attention carry?",
            ("Cost growing with the length squared, and no sense of order.", True,
             "Shuffle the positions and it computes the same blends; order must be added on purpose."),
            ("It cannot be parallelised, and it forgets distant tokens.", False,
             "Those are the RNN's problems: attention runs over all positions at once, with a path of "
             "length one between any two."),
            ("It needs a GPU, and it only works for text, not other sequences.", False,
             "It runs on a CPU and on any sequence."),
            ("The KV cache shrinks as the text grows, losing old tokens.", False,
             "It grows linearly with the length.")),
        _mc("Section 7's model with a learned position table, trained on sequences of 16 tokens, is "
            "tested on 128. What happens at the positions past 16?",
            ("It is as right there as on the first 16: the task is the same at every position.", False,
             "Section 7 measured accuracy falling to close to chance past position 16."),
            ("It raises an error: the model cannot run past its training length.", False,
             "The table has 128 rows, so it runs at every length; it is the answers that go wrong."),
            ("Close to chance: those rows of the table never got a gradient and are still random.", True,
             "Training on 16 tokens never used rows 16 to 127, so Adam never moved them; rotary "
             "positions, which have no table, fail more gently."),
            ("It gets slowly worse, a little with every position further out.", False,
             "That gradual decline is what the rotary model showed; the table model drops at once.")),
    ],
    "07": [
        _mc("In notebook 07's task the period changes from one sequence to the next. Why can a head that "
            "always looks a fixed distance back not predict the repeat?",
            ("The causal mask hides every position further back than the previous one.", False,
             "The mask hides only later positions; every earlier one can be attended to."),
            ("The earlier copy of the current token sits a different distance back each time.", True,
             "Only the tokens say where it is: find the earlier occurrence of the current token."),
            ("TinyGPT's position embeddings are fixed, so no head can learn a distance.", False,
             "They are learned; the fixed-offset model of attnviz.toys.copy learned to look 7 back."),
            ("A head may only look at the previous token or at the first one.", False,
             "A head can look at any earlier position; the fixed-offset model's heads look 7 back.")),
        _mc("What does a head's induction (prefix-matching) score measure?",
            ("The weight a query puts on the key just before its own position, t - 1.", False,
             "That is the previous-token score."),
            ("How far the repeat accuracy falls when that head is knocked out.", False,
             "That is a knockout; the score reads only the attention weights."),
            ("The weight on the earlier occurrences of the query's own token.", False,
             "One position too early: the token to predict is the one after the earlier occurrence."),
            ("The weight on the keys just after earlier occurrences of the query's token.", True,
             "Attending there and copying that token predicts the repeat (the score of Olsson et al. 2022; "
             "notebook 07 counts 0.4 or more).")),
        _mc("Hiding the previous-token head from layer 1's keys alone loses the repeat; hiding it from "
            "layer 1's queries and values changes almost nothing. What does that show?",
            ("Layer 1's induction heads read what the previous-token head wrote through their keys.", True,
             "A key says \"my previous token was X\", the query \"I am X\": K-composition."),
            ("The previous-token head is not needed by the model at all.", False,
             "Knocking it out everywhere lost most of the repeat on each of notebook 07's seeds."),
            ("Layer 1 reads the previous-token head through its values, not its keys.", False,
             "Hiding it from the values (with the queries) changed almost nothing."),
            ("The previous-token head and the induction heads sit in the same layer.", False,
             "The previous-token head is in layer 0, the induction heads in layer 1; one layer reads "
             "what the other wrote.")),
        _mc("A one-layer attention-only model trained on the same data gets about a third of the "
            "repeated tokens right. What is it missing?",
            ("Only more training steps: trained longer, one layer would form the same circuit.", False,
             "In one layer a key is made from its own token and position alone, so however long it "
             "trains no key can hold the token before it, and the circuit cannot form (07 stops it at "
             "250 steps, its loss still drifting down: what else longer training finds is not measured)."),
            ("A key that knows its previous token, which only an earlier layer can write there.", True,
             "Matching the current token, one layer can find the earlier copy itself, but that key "
             "holds the copy, not the token after it."),
            ("The ability to attend to positions earlier than the previous one.", False,
             "One layer of attention can look at any earlier position."),
            ("A larger vocabulary, so that tokens repeat less often by chance.", False,
             "Each segment's tokens are distinct already; the vocabulary is not the problem.")),
        _mc("In training, the repeat loss fell slowly for about a hundred steps, then dropped within a "
            "few dozen. What happened at the drop?",
            ("The learning rate was raised for the rest of training.", False,
             "It stayed at 0.007 throughout."),
            ("The model memorised the sequences it was trained on.", False,
             "Every step draws fresh sequences, and it predicts held-out ones, even at periods it "
             "never saw."),
            ("The previous-token and induction scores rose at the same steps.", True,
             "The circuit formed there: their halfway steps were within 25 steps of the loss's, on "
             "each of notebook 07's seeds."),
            ("The first segment of each sequence became predictable.", False,
             "Its tokens are random, so they stay nearly unpredictable (at best a model rules out the "
             "tokens already seen); the loss that dropped is the repeat's.")),
    ],
    "08": [
        _mc("On the repeat task, why does the first half's loss stay near log 16 however long you train?",
            ("The model is too small to learn it.", False,
             "No model can: the tokens are random, so a uniform guess (log 16 nats) is the best possible."),
            ("Its tokens are random, so nothing in the context predicts them.", True,
             "The floor for random tokens is log(vocab); a loss below it means the model reads the answer."),
            ("The causal mask hides the first half from the model.", False,
             "The mask hides only later positions; the first half can see itself, it just holds no clue."),
            ("The learning rate is too high for those positions.", False,
             "No learning rate beats a uniform guess on random tokens.")),
        _mc("What may a KV cache store, and why is that safe?",
            ("Every position's queries, since each query is used at every later step.", False,
             "A query is used once, by its own position; it is keys and values that later queries need."),
            ("Each earlier position's keys and values: under a causal mask they never change.", True,
             "No position sees a later one, so its keys and values are final once computed."),
            ("The attention weights of earlier steps, to reuse them.", False,
             "The weights of a new query depend on the new query; nothing there is reusable."),
            ("The logits of earlier positions.", False, "Generation only needs the last position's logits.")),
        _mc("A cached decoding step calls `F.scaled_dot_product_attention(q_new, K_cache, V_cache, "
            "is_causal=True)` with one new query. What happens?",
            ("It is correct: the new query sees every cached key.", False,
             "is_causal builds ones(1, n).tril(), aligned top left: the query sees key 0 only."),
            ("It raises an error, because q_new and K_cache have different lengths.", False,
             "It runs without complaint; that is what makes it a trap."),
            ("The new query attends to key 0 only: the mask is aligned top left.", True,
             "The fix: no mask for one new query, a bottom-right mask for several."),
            ("It attends to the newest key only.", False,
             "That would need a mask that keeps only the last key; is_causal's top-left mask keeps only "
             "the first, key 0 (a bottom-right one would keep them all).")),
        _mc("A model trained without the causal mask reaches a loss far below log(vocab) on random tokens. "
            "What do you expect when it generates?",
            ("Better text than the causal model, since its loss is lower.", False,
             "The low loss came from reading the answer one position ahead, which generation does not have."),
            ("The same text: the mask only matters for training speed.", False,
             "The mask decides what a position may read; training without it teaches a shortcut."),
            ("Worse than its loss promised: it learned to read the next token.", True,
             "Notebook 08 measured it on every seed: a loss below what random tokens allow, generation worse "
             "than the causal model's, and far worse once 30% of the copy is corrupted."),
            ("It raises an error at the first generated token.", False,
             "Nothing errors; the tokens are just wrong.")),
        _mc("Grouped-query attention, 32 query heads and 8 key/value heads: what happens to the KV cache?",
            ("It is 4 times smaller; whether quality holds must be measured.",
             True, "Only key/value heads are cached: 8 instead of 32. Whether quality holds is an "
             "experiment, not a given."),
            ("It is 32 times smaller.", False, "That is multi-query attention, with 1 key/value head."),
            ("It stays the same: all 32 query heads still need their own keys.", False,
             "Each group of 4 query heads reads one shared key/value head, so only 8 are stored."),
            ("It is 8 times smaller.", False, "The saving is 32 / 8 = 4.")),
    ],
}
