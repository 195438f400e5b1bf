#!/usr/bin/env python3
"""gen_lesson07.py - record PyTorch's numbers for lesson 7 (cross-attention).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked against
(CPU, no MKL, so train-mode dropout takes the generic path the C code repeats):

    /usr/bin/python3 tests/reference/gen_lesson07.py

For each case below it does exactly the lesson's draws after
torch.manual_seed(seed):

    Q = torch.rand(batch, seq_q, dim)
    K = torch.rand(batch, seq_k, dim)
    V = torch.rand(batch, seq_k, dim)
    attention_mask = torch.randint(0, 2, (batch, heads, seq_q, seq_k))
    cross_attention = CrossAttention(dim, heads)       # the Self Attention notebook's class
    output = cross_attention(Q, K, V, attention_mask)  # .eval() unless the case trains

and writes into tests/data/lesson07/<case>/:

  <name>.npy   every name the lesson's --dump writes: Q K V (the inputs),
               attention_mask ('<i8'), q_proj.* k_proj.* v_proj.* o_proj.*,
               q_state k_state v_state output_mid (batch, heads, len, head_dim),
               attention_weight (after softmax, before dropout), output
               (all '<f4', C order)
  stdout.txt   every line of the lesson that PyTorch (or the numpy of Chen Ming's post)
               can print: the notebook's sixteen shape lines, the numbers of
               batch 0, the BLIP-shaped run, the post's numpy shapes, and the
               self-attention run with its torch.equal line.

The build and the tests never run Python.
"""
import math

import numpy as np
import torch
import torch.nn as nn

from reference import listed_by_values, record_cases, save, save_all, say, stdout_txt

# case directory -> (seed, batch, seq_q, seq_k, dim, heads, train); the lesson's
# defaults are seed0's
NAMES = ("seed", "batch", "seq_q", "seq_k", "dim", "heads", "train")
CASES = {
    "seed0": (0, 3, 4, 6, 128, 8, False),                  # the notebook's sizes
    "seed7": (7, 3, 4, 6, 128, 8, False),
    "seed1_train": (1, 3, 4, 6, 128, 8, True),             # dropout on, as in the notebook
    "seed3_batch2_seqq6_seqk2_dim48_heads4": (3, 2, 6, 2, 48, 4, False),   # seq_q > seq_k
    "seed5_batch1_seqq2_seqk9_dim12_heads3": (5, 1, 2, 9, 12, 3, False),   # BLIP run has 2 queries
}


class CrossAttention(nn.Module):
    """The Self Attention notebook's class as written; the forward also keeps its tensors."""

    def __init__(self, hidden_dim, nums_head) -> None:
        super().__init__()
        self.nums_head = nums_head
        self.head_dim = hidden_dim // nums_head
        self.hidden_dim = hidden_dim
        self.q_proj = nn.Linear(hidden_dim, hidden_dim)
        self.k_proj = nn.Linear(hidden_dim, hidden_dim)
        self.v_proj = nn.Linear(hidden_dim, hidden_dim)
        self.att_dropout = nn.Dropout(0.1)
        self.o_proj = nn.Linear(hidden_dim, hidden_dim)
        self.kept = {}

    def forward(self, Q, K, V, attention_mask=None):
        batch_size, seq_len_q, _ = Q.size()
        _, seq_len_k, _ = K.size()
        Q = self.q_proj(Q)
        K = self.k_proj(K)
        V = self.v_proj(V)
        say(f"Q after projection: {Q.shape}")
        say(f"K after projection: {K.shape}")
        say(f"V after projection: {V.shape}")
        q_state = Q.view(batch_size, seq_len_q, self.nums_head, self.head_dim).transpose(1, 2)
        k_state = K.view(batch_size, seq_len_k, self.nums_head, self.head_dim).transpose(1, 2)
        v_state = V.view(batch_size, seq_len_k, self.nums_head, self.head_dim).transpose(1, 2)
        say(f"q_state: {q_state.shape}")
        say(f"k_state: {k_state.shape}")
        say(f"v_state: {v_state.shape}")
        attention_weight = (q_state @ k_state.transpose(-1, -2)) / math.sqrt(self.head_dim)
        say(f"attention_weight before mask: {attention_weight.shape}")
        if attention_mask is not None:
            attention_weight = attention_weight.masked_fill(attention_mask == 0, float("-1e20"))
        say(f"attention_weight after mask: {attention_weight.shape}")
        attention_weight = torch.softmax(attention_weight, dim=-1)
        say(f"attention_weight after softmax: {attention_weight.shape}")
        self.kept = dict(q_state=q_state, k_state=k_state, v_state=v_state,
                         attention_weight=attention_weight)
        attention_weight = self.att_dropout(attention_weight)
        output_mid = attention_weight @ v_state
        say(f"output_mid: {output_mid.shape}")
        self.kept["output_mid"] = output_mid
        output_mid = output_mid.transpose(1, 2).contiguous()
        output = output_mid.view(batch_size, seq_len_q, -1)
        output = self.o_proj(output)
        say(f"output: {output.shape}")
        return output


class MultiHeadAttention(nn.Module):
    """Lesson 6's class (the Self Attention notebook's), without its prints."""

    def __init__(self, hidden_dim, nums_head) -> None:
        super().__init__()
        self.nums_head = nums_head
        self.head_dim = hidden_dim // nums_head
        self.hidden_dim = hidden_dim
        self.q_proj = nn.Linear(hidden_dim, hidden_dim)
        self.k_proj = nn.Linear(hidden_dim, hidden_dim)
        self.v_proj = nn.Linear(hidden_dim, hidden_dim)
        self.att_dropout = nn.Dropout(0.1)
        self.o_proj = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, X, attention_mask=None):
        batch_size, seq_len, hidden_dim = X.size()
        Q = self.q_proj(X)
        K = self.k_proj(X)
        V = self.v_proj(X)
        q_state = Q.view(batch_size, seq_len, self.nums_head, self.head_dim).transpose(1, 2)
        k_state = K.view(batch_size, seq_len, self.nums_head, self.head_dim).transpose(1, 2)
        v_state = V.view(batch_size, seq_len, self.nums_head, self.head_dim).transpose(1, 2)
        attention_weight = q_state @ k_state.transpose(-1, -2) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            attention_weight = attention_weight.masked_fill(attention_mask == 0, float("-1e20"))
        attention_weight = torch.softmax(attention_weight, dim=3)
        attention_weight = self.att_dropout(attention_weight)
        output_mid = attention_weight @ v_state
        output_mid = output_mid.transpose(1, 2).contiguous()
        output = output_mid.view(batch_size, seq_len, -1)
        return self.o_proj(output)


def soft_max(z):
    """The numpy softmax of Chen Ming's post (no max subtracted)."""
    t = np.exp(z)
    return np.exp(z) / np.expand_dims(np.sum(t, axis=-1), -1)


def post_numpy(Query, Key, Value, num_attention_heads):
    """The numpy cross-attention of Chen Ming's post, on one batch element."""
    values_length_q, hidden_size = Query.shape
    values_length_kv = Key.shape[0]
    attention_head_size = hidden_size // num_attention_heads
    Query = np.reshape(Query, [values_length_q, num_attention_heads, attention_head_size])
    Key = np.reshape(Key, [values_length_kv, num_attention_heads, attention_head_size])
    Value = np.reshape(Value, [values_length_kv, num_attention_heads, attention_head_size])
    Query = np.transpose(Query, [1, 0, 2])
    Key = np.transpose(Key, [1, 0, 2])
    Value = np.transpose(Value, [1, 0, 2])
    scores = Query @ np.transpose(Key, [0, 2, 1])
    say(np.shape(scores))
    scores = soft_max(scores)
    say(np.shape(scores))
    out = scores @ Value
    say(np.shape(out))
    out = np.transpose(out, [1, 0, 2])
    say(np.shape(out))
    out = np.reshape(out, [values_length_q, hidden_size])
    say(np.shape(out))


def asides(Q, K, V, attention_mask, cross_attention, output, heads):
    cross_attention.eval()     # the asides draw nothing
    kept = dict(cross_attention.kept)
    say("attention_mask[0, 0]:")
    say(attention_mask[0, 0])
    say("attention_weight[0, 0]:")
    say(kept["attention_weight"][0, 0])
    say("output[0, :, :8]:")
    say(output[0, :, :8])

    text_len = min(3, Q.shape[1])
    say(f"output = cross_attention(Q[:, :{text_len}], K, V)")
    cross_attention(Q[:, :text_len], K, V)

    post_numpy(Q[0].numpy(), K[0].numpy(), V[0].numpy(), heads)

    say("output = cross_attention(Q, Q, Q)")
    self_output = cross_attention(Q, Q, Q)
    mha = MultiHeadAttention(cross_attention.hidden_dim, heads)
    mha.load_state_dict({k: v for k, v in cross_attention.state_dict().items()})
    mha.eval()
    say("torch.equal(cross_attention(Q, Q, Q), MultiHeadAttention(Q) with the same weights):",
        torch.equal(self_output, mha(Q)))
    return kept


def record(directory, seed, batch, seq_q, seq_k, dim, heads, train):
    with stdout_txt(directory):
        torch.manual_seed(seed)
        Q = torch.rand(batch, seq_q, dim)
        K = torch.rand(batch, seq_k, dim)
        V = torch.rand(batch, seq_k, dim)
        attention_mask = torch.randint(0, 2, (batch, heads, seq_q, seq_k))
        say(f"Q shape: {Q.shape}")
        say(f"K shape: {K.shape}")
        say(f"V shape: {V.shape}")
        say(f"attention_mask shape: {attention_mask.shape}")
        cross_attention = CrossAttention(hidden_dim=dim, nums_head=heads)
        cross_attention.train(train)
        output = cross_attention(Q, K, V, attention_mask)
        say(f"Output shape: {output.shape}")
        kept = asides(Q, K, V, attention_mask, cross_attention, output, heads)

    save_all(directory, dict(Q=Q, K=K, V=V, attention_mask=attention_mask))
    save_all(directory, cross_attention.state_dict())
    save_all(directory, kept)
    save(directory, "output", output)


def main():
    record_cases("lesson07", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
