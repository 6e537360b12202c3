# out= writes into a tensor you give; it does not record a graph
a = torch.ones(3)
o = torch.empty(3)
r = torch.add(a, 1, out=o)
# plain: assert r is o and o.tolist() == [2.0, 2.0, 2.0]
p = torch.empty(0)
torch.mul(a, 2, out=p)
# plain: assert p.shape == (3,)
q = torch.ones(3, requires_grad=True)
torch.add(q, 1, out=o)  # expect: RuntimeError
k = torch.zeros(3, dtype=torch.int64)
torch.add(a, 0.5, out=k)  # expect: RuntimeError
# plain: import pytest
# plain: with pytest.raises(RuntimeError):
# plain:     torch.add(a.long(), 0.5, out=k)  # converting the inputs is no fix: the result is float
# plain: k.copy_(torch.add(a, 0.5))
# plain: assert k.tolist() == [1, 1, 1]
# says: store into a Float tensor (call it without out=, or give out= a Float tensor)
# never: convert the inputs
