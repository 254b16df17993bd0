refused: METAL: kernel E_8_10 uses float64, which METAL does not have (cast to float32 first)
