/// Peak levels, and sums of squares while RMS is measured, gathered by the process thread over one
/// or more cycles.
///
/// Ownership: a fixed pool of blocks is allocated with the engine. A block is either free (in the
/// `meterFree` ring, zeroed by its reader), being filled (held by the process thread), or full (in
/// the `meterFull` ring, read by one thread at a time: `Engine.collectMeters`, under RouterCore's
/// `PeakBoard` lock). Nothing is allocated after setup.
///
/// The squares are summed only over the cycles the engine measured RMS in (`squaredFrames` of
/// them, which may be fewer than `frames`: measuring may start or stop within a block), so
/// `squares / squaredFrames` is the mean square over those frames.
struct MeterBlock {
    var inputPeaks: UnsafeMutablePointer<Float>
    var outputPeaks: UnsafeMutablePointer<Float>
    var inputSquares: UnsafeMutablePointer<Double>
    var outputSquares: UnsafeMutablePointer<Double>
    var frames: Int
    var squaredFrames: Int
    var cycles: Int

    static func make(inputs: Int, outputs: Int) -> UnsafeMutablePointer<MeterBlock> {
        let block = UnsafeMutablePointer<MeterBlock>.allocate(capacity: 1)
        let inputPeaks = UnsafeMutablePointer<Float>.allocate(capacity: inputs)
        inputPeaks.initialize(repeating: 0, count: inputs)
        let outputPeaks = UnsafeMutablePointer<Float>.allocate(capacity: outputs)
        outputPeaks.initialize(repeating: 0, count: outputs)
        let inputSquares = UnsafeMutablePointer<Double>.allocate(capacity: inputs)
        inputSquares.initialize(repeating: 0, count: inputs)
        let outputSquares = UnsafeMutablePointer<Double>.allocate(capacity: outputs)
        outputSquares.initialize(repeating: 0, count: outputs)
        block.initialize(to: MeterBlock(inputPeaks: inputPeaks, outputPeaks: outputPeaks,
                                        inputSquares: inputSquares, outputSquares: outputSquares,
                                        frames: 0, squaredFrames: 0, cycles: 0))
        return block
    }

    static func destroy(_ block: UnsafeMutablePointer<MeterBlock>) {
        block.pointee.inputPeaks.deallocate()
        block.pointee.outputPeaks.deallocate()
        block.pointee.inputSquares.deallocate()
        block.pointee.outputSquares.deallocate()
        block.deallocate()
    }
}
