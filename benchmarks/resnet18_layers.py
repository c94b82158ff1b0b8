"""ResNet-18's conv2d layers C1-C12 as in the TVM paper's benchmark ("same" padding)."""

CONV_LAYERS = {
    "C1": (224, 3, 64, 7, 2),
    "C2": (56, 64, 64, 3, 1),
    "C3": (56, 64, 64, 1, 1),
    "C4": (56, 64, 128, 3, 2),
    "C5": (56, 64, 128, 1, 2),
    "C6": (28, 128, 128, 3, 1),
    "C7": (28, 128, 256, 3, 2),
    "C8": (28, 128, 256, 1, 2),
    "C9": (14, 256, 256, 3, 1),
    "C10": (14, 256, 512, 3, 2),
    "C11": (14, 256, 512, 1, 2),
    "C12": (7, 512, 512, 3, 1),
}
"""name -> (H = W, input channels, output channels, kernel size, stride)."""
