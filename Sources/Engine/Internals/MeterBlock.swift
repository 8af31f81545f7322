/// Peak levels gathered by the process thread over one or more cycles.
///
/// Ownership: a fixed pool of blocks is allocated with the engine. A block is either free (in the
/// `meterFree` ring, zeroed by its reader), being filled (held by the process thread), or full (in
/// the `meterFull` ring, read by one thread at a time: `Engine.collectMeters`, under RouterCore's
/// `PeakBoard` lock). Nothing is allocated after setup.
struct MeterBlock {
    var inputPeaks: UnsafeMutablePointer<Float>
    var outputPeaks: UnsafeMutablePointer<Float>
    var frames: Int
    var cycles: Int

    static func make(inputs: Int, outputs: Int) -> UnsafeMutablePointer<MeterBlock> {
        let block = UnsafeMutablePointer<MeterBlock>.allocate(capacity: 1)
        let inputPeaks = UnsafeMutablePointer<Float>.allocate(capacity: inputs)
        inputPeaks.initialize(repeating: 0, count: inputs)
        let outputPeaks = UnsafeMutablePointer<Float>.allocate(capacity: outputs)
        outputPeaks.initialize(repeating: 0, count: outputs)
        block.initialize(to: MeterBlock(inputPeaks: inputPeaks, outputPeaks: outputPeaks, frames: 0, cycles: 0))
        return block
    }

    static func destroy(_ block: UnsafeMutablePointer<MeterBlock>) {
        block.pointee.inputPeaks.deallocate()
        block.pointee.outputPeaks.deallocate()
        block.deallocate()
    }
}
