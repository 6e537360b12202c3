# a hand-written update that never resets w.grad
w = torch.tensor([1.0, -1.0], requires_grad=True)
x = torch.tensor([2.0, 3.0])
for step in range(3):
    loss = (w * x).sum() ** 2
    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
# loop(4): w.grad never reset in the loop: from turn 2 on (turns 2–3)
# loop(4): 'fix': 'w.grad = None', 'line': 6
# says(6): w.grad was not reset since the backward of turn 1
# says(6): `w -= 0.01 * w.grad` (line 8) had already used it to update w
# says(6): add `w.grad = None` in the loop before `loss.backward()` (line 6)
# plain: w2, total = torch.tensor([1.0, -1.0], requires_grad=True), torch.zeros(2)
# plain: for _ in range(3):
# plain:     g, = torch.autograd.grad((w2 * x).sum() ** 2, w2)
# plain:     total += g
# plain:     with torch.no_grad():
# plain:         w2 -= 0.01 * total
# plain: assert torch.allclose(w.grad, total) and torch.allclose(w, w2)
